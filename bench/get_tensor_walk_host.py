"""``safe_open(...).get_tensor`` over every key (in keys() order, then shuffled) of
/dev/shm/hl.safetensors on the host, best of 3. usage: python3 bench/get_tensor_walk_host.py np|pt gdio|package"""
import sys, time, os, random
fw = sys.argv[1]
p = "/dev/shm/hl.safetensors"
if sys.argv[2] == "gdio":
    from gdio.safetensors import safe_open
else:
    from safetensors import safe_open
for order in ("keys", "shuffled"):
    best = 9
    for _ in range(3):
        with safe_open(p, framework=fw) as f:
            ks = list(f.keys())
            if order == "shuffled": random.Random(3).shuffle(ks)
            t0 = time.perf_counter(); d = {k: f.get_tensor(k) for k in ks}; dt = time.perf_counter() - t0
        best = min(best, dt)
    n = os.path.getsize(p)
    print(f"{sys.argv[2]:8s} {fw} {order:9s} {best*1e3:7.1f} ms {n/best/1e9:5.2f} GB/s")
