# examples/ntrans.mu at reduced shapes.
input H : f16[8, 128]
input X : f16[8, 128]
input alpha : f16[8, 128]
hs = square(H)
hss = sum(hs, dim=1, group=128)
hms = scale(hss, factor=1/128)
hr = sqrt(hms)
hn = div(H, hr)
d = sub(hn, X)
ad = mul(alpha, d)
y = add(X, ad)
ys = square(y)
yss = sum(ys, dim=1, group=128)
yms = scale(yss, factor=1/128)
yr = sqrt(yms)
O = div(y, yr)
output O
