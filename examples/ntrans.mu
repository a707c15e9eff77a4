# nTrans (normalized Transformer update, Mirage benchmark): O = norm(X + alpha * (norm(H) - X)),
# norm = RMS normalization over the hidden dim.
input H : f16[8, 4096]
input X : f16[8, 4096]
input alpha : f16[8, 4096]
hs = square(H)
hss = sum(hs, dim=1, group=4096)
hms = scale(hss, factor=1/4096)
hr = sqrt(hms)
hn = div(H, hr)
d = sub(hn, X)
ad = mul(alpha, d)
y = add(X, ad)
ys = square(y)
yss = sum(ys, dim=1, group=4096)
yms = scale(yss, factor=1/4096)
yr = sqrt(yms)
O = div(y, yr)
output O
