"""A client written for RedisBloom, unchanged: redis-py's `bf()` and `cf()` commands (with their
reply parsers: BFInfo, CFInfo, the scandump/loadchunk loop of redis-py's docs) against a server
with the cuckoo-sst module. Run by tests/redis.rs as `python3 redis_py.py PORT`; exits non-zero
with the failed assertion on any difference.
"""

import sys

import redis

r = redis.Redis(host="127.0.0.1", port=int(sys.argv[1]))
r.flushall()

# Cuckoo filter commands.
cf = r.cf()
assert cf.create("c", 1000)
assert cf.add("c", "alice") == 1
assert cf.addnx("c", "alice") == 0
assert cf.addnx("c", "bob") == 1
assert cf.insert("c", ["x", "y"]) == [1, 1]
assert cf.insertnx("c", ["x", "z"]) == [0, 1]
assert cf.exists("c", "alice") == 1
assert cf.exists("c", "nobody") == 0
assert cf.mexists("c", "alice", "nobody", "z") == [1, 0, 1]
assert cf.count("c", "x") == 1
assert cf.delete("c", "x") == 1
assert cf.count("c", "x") == 0
info = cf.info("c")
assert info.insertedNum == 4, vars(info)
assert info.deletedNum == 1, vars(info)
assert info.filterNum == 1 and info.bucketSize == 4 and info.maxIteration == 500, vars(info)
assert info.size > 0 and info.bucketNum > 0 and info.expansionRate == 1, vars(info)
assert cf.create("fixed", 100, expansion=0, bucket_size=2, max_iterations=20)
assert cf.info("fixed").bucketSize == 2
assert cf.insert("auto", ["a"], capacity=5000) == [1]
try:
    cf.insert("missing", ["a"], nocreate=True)
    raise AssertionError("NOCREATE made a key")
except redis.ResponseError as e:
    assert "not found" in str(e), e

# Bloom filter commands.
bf = r.bf()
assert bf.create("b", 0.01, 1000)
assert bf.add("b", "a") == 1
assert bf.add("b", "a") == 0
assert bf.madd("b", "a", "b", "c") == [0, 1, 1]
assert bf.insert("b", ["c", "d"]) == [0, 1]
assert bf.exists("b", "d") == 1
assert bf.exists("b", "nobody") == 0
assert bf.mexists("b", "a", "nobody") == [1, 0]
binfo = bf.info("b")
assert binfo.insertedNum == 4 and binfo.filterNum == 1, vars(binfo)
assert binfo.capacity >= 1000 and binfo.size > 0 and binfo.expansionRate == 2, vars(binfo)
assert bf.create("nonscaling", 0.001, 500, noScale=True)
assert bf.info("nonscaling").expansionRate is None
assert bf.insert("auto-b", ["q"], capacity=200, error=0.001) == [1]

# SCANDUMP / LOADCHUNK, as redis-py's docs write the loop: a copy answers as the original.
for kind, key, items in ((bf, "b", ["a", "b", "c", "d"]), (cf, "c", ["alice", "bob", "y", "z"])):
    chunks = []
    it = 0
    while True:
        it, data = kind.scandump(key, it)
        if it == 0:
            break
        chunks.append((it, data))
    for it, data in chunks:
        kind.loadchunk(key + "-copy", it, data)
    for item in items:
        assert kind.exists(key + "-copy", item) == 1, (key, item)
    assert r.dump(key) is not None

print("redis-py", redis.__version__, "ok")
