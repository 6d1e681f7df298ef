# python multiprocessing with a Manager (cases-tree-sk.sh): a server process
# listening on a UNIX socket path, the parent and two workers each connected
# to it, appending to a managed list under a managed lock; the same summary
# as an uninterrupted run.
import multiprocessing as mp, sys, time

def work(items, lock, k, n):
    for i in range(n):
        with lock:
            items.append(k * 1000 + i)
        time.sleep(0.02)

if __name__ == "__main__":
    mp.set_start_method("fork")
    n = int(sys.argv[1])
    with mp.Manager() as m:
        items, lock = m.list(), m.Lock()
        ps = [mp.Process(target=work, args=(items, lock, k, n)) for k in (1, 2)]
        for p in ps:
            p.start()
        print("started", flush=True)
        for p in ps:
            p.join()
        got = list(items)
        mine = [x for x in got if x < 2000], [x for x in got if x >= 2000]
        ok = mine[0] == [1000 + i for i in range(n)] and mine[1] == [2000 + i for i in range(n)]
        print("items %d, each worker's in order: %s, exit codes %s" %
              (len(got), ok, [p.exitcode for p in ps]), flush=True)
