# A name with a non-ASCII letter (e with an acute accent): names are ASCII.
input Xé : f32[4]
output Xé
