# Fits P = sigmoid(A * logit(score) + B) on pairs.json and prints the ECE (10 bins) before and after,
# and the embedding calibration (a, b) that folds it in: python3 scripts/fit-calibration.py pairs.json A_NOW B_NOW
# [--write crates/judge/src/fitted.json] (writes that (a, b) into the calibration entry of the one home of fitted models)
import json, sys, math
from fitted_json import write_entry
write = None
if "--write" in sys.argv:
    at = sys.argv.index("--write"); write = sys.argv[at + 1]; del sys.argv[at:at + 2]
pairs = json.load(open(sys.argv[1]))
def logit(p): p=min(max(p,1e-9),1-1e-9); return math.log(p/(1-p))
def ece(ps):
    bins=[[0,0,0] for _ in range(10)]
    for p,y in ps:
        b=min(int(p*10),9); bins[b][0]+=1; bins[b][1]+=p; bins[b][2]+=y
    n=len(ps); e=sum(abs(b[1]-b[2]) for b in bins if b[0])/n
    return e, [(i/10, b[0], round(b[1]/b[0],3) if b[0] else None, round(b[2]/b[0],3) if b[0] else None) for i,b in enumerate(bins)]
print("ECE now", round(ece(pairs)[0],4))
x=[logit(p) for p,_ in pairs]; y=[t for _,t in pairs]
A,B=1.0,0.0
for it in range(100):
    g=[0,0]; H=[[0,0],[0,0]]
    for xi,yi in zip(x,y):
        p=1/(1+math.exp(-(A*xi+B))); d=p-yi; w=p*(1-p)
        g[0]+=d*xi; g[1]+=d; H[0][0]+=w*xi*xi; H[0][1]+=w*xi; H[1][1]+=w
    H[1][0]=H[0][1]; det=H[0][0]*H[1][1]-H[0][1]**2
    dA=(H[1][1]*g[0]-H[0][1]*g[1])/det; dB=(H[0][0]*g[1]-H[1][0]*g[0])/det
    A-=dA; B-=dB
    if abs(dA)+abs(dB)<1e-10: break
print("A", A, "B", B)
new=[(1/(1+math.exp(-(A*logit(p)+B))),t) for p,t in pairs]
print("ECE after", round(ece(new)[0],4))
if len(sys.argv)>2:
    a,b=map(float,sys.argv[2:4]); print("new a", A*a, "new b", A*b+B)
    if write: write_entry(write, "calibration", {"a": A*a, "b": A*b+B})
