# nTrans (examples/ntrans.mu) at reduced shapes: O = norm(X + alpha * (norm(H) - X)).
input H : f16[4, 64]
input X : f16[4, 64]
input alpha : f16[4, 64]
hs = square(H)
hss = sum(hs, dim=1, group=64)
hms = scale(hss, factor=1/64)
hr = sqrt(hms)
hn = div(H, hr)
d = sub(hn, X)
ad = mul(alpha, d)
y = add(X, ad)
ys = square(y)
yss = sum(ys, dim=1, group=64)
yms = scale(yss, factor=1/64)
yr = sqrt(yms)
O = div(y, yr)
output O
