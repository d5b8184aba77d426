#!/usr/bin/env python3
"""The 100,000-item PUT of issue 39's "nothing else slower": a snapshot of 100,000 items in three sections
PUT to a feed, then its successor (5% updated, 10% deleted, 10% inserted), timed (wall and the server's CPU)
for each binary, ROUNDS (5) rounds alternating which goes first; prints the medians.
    ROUNDS=3 python3 Benchmarks/put-100k.py NEW OLD"""
import json, os, random, subprocess, sys, time, http.client, socket
def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p
def snap(n, seed):
    rng = random.Random(seed)
    ids = list(range(n))
    items = [{"id": f"item-{i}", "kind": "card", "model": {"title": f"item {i}", "n": i}} for i in ids]
    return items
rng = random.Random(7)
old = snap(100000, 1)
new = [dict(x) for x in old]
for i in rng.sample(range(len(new)), 5000): new[i] = {"id": new[i]["id"], "kind": "card", "model": {"title": "changed", "n": -i}}
dels = set(rng.sample(range(len(new)), 10000)); new = [x for j, x in enumerate(new) if j not in dels]
for k in range(10000): new.insert(rng.randrange(len(new)), {"id": f"new-{k}", "kind": "card", "model": {"title": "new", "n": k}})
def doc(items): return json.dumps({"sections": [{"id": "a", "items": items[:len(items)//3]}, {"id": "b", "items": items[len(items)//3:2*len(items)//3]}, {"id": "c", "items": items[2*len(items)//3:]}]}, separators=(",", ":")).encode()
OLD, NEW = doc(old), doc(new)
def ticks(pid):
    f = open(f"/proc/{pid}/stat").read().split(")")[-1].split(); return int(f[11]) + int(f[12])
def run(binary):
    port = free_port()
    p = subprocess.Popen([binary, "--port", str(port), "--data", "none", "--public", os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "Public"), "--log-level", "warning", "--max-body", "67108864"], stderr=subprocess.DEVNULL)
    for _ in range(100):
        try: socket.create_connection(("127.0.0.1", port)).close(); break
        except OSError: time.sleep(0.05)
    c = http.client.HTTPConnection("127.0.0.1", port)
    c.request("PUT", "/feeds/big", OLD); r = c.getresponse(); r.read(); assert r.status in (200, 201), r.status
    t0 = ticks(p.pid); w0 = time.monotonic()
    c.request("PUT", "/feeds/big", NEW); r = c.getresponse(); body = r.read(); assert r.status == 200, (r.status, body)
    w1 = time.monotonic(); t1 = ticks(p.pid)
    p.terminate(); p.wait()
    return (w1 - w0) * 1000, (t1 - t0) * 10
res = {b: [] for b in sys.argv[1:]}
for r in range(int(os.environ.get("ROUNDS", "5"))):
    order = sys.argv[1:] if r % 2 == 0 else sys.argv[1:][::-1]
    for b in order: res[b].append(run(b))
for b, v in res.items():
    ms = sorted(x[0] for x in v); cpu = sorted(x[1] for x in v)
    print(f"{b}: wall ms median {ms[len(ms)//2]:.0f} {['%.0f'%x for x in ms]}  server cpu ms median {cpu[len(cpu)//2]} {cpu}")
