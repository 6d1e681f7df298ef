# python multiprocessing with a Manager (cases-tree-sk.sh): a server process
# listening on a UNIX socket path, the parent and two workers each connected
# to it, appending to a managed list under a managed lock; the same summary
# as an uninterrupted run.
# tree_sk_manager.py N GATE: "started" once the parent and both workers met at
# a managed barrier (every connection they made is accepted, none is still in
# the listener's queue); after its N items each worker keeps taking the lock
# until the file GATE exists, so the tree is whole, mid-run, until the case
# lets it end.
import multiprocessing as mp, os, sys, time

def work(items, lock, met, k, n, gate):
    with lock:
        items.append(k * 1000)
    met.wait()
    for i in range(1, n):
        with lock:
            items.append(k * 1000 + i)
        time.sleep(0.02)
    while not os.path.exists(gate):
        with lock:
            pass
        time.sleep(0.02)

if __name__ == "__main__":
    mp.set_start_method("fork")
    n, gate = int(sys.argv[1]), sys.argv[2]
    with mp.Manager() as m:
        items, lock, met = m.list(), m.Lock(), m.Barrier(3)
        ps = [mp.Process(target=work, args=(items, lock, met, k, n, gate)) for k in (1, 2)]
        for p in ps:
            p.start()
        met.wait()
        print("started", flush=True)
        for p in ps:
            p.join()
        got = list(items)
        mine = [x for x in got if x < 2000], [x for x in got if x >= 2000]
        ok = mine[0] == [1000 + i for i in range(n)] and mine[1] == [2000 + i for i in range(n)]
        print("items %d, each worker's in order: %s, exit codes %s" %
              (len(got), ok, [p.exitcode for p in ps]), flush=True)
