#!/usr/bin/env python3
"""A terminal and an interactive shell's job control, for --shell-job cases.

pty-shell.py DIR PROG [ARGS...]

The parent holds a pty master (window 50x120) and copies what it reads to
DIR/pty.log; bytes written to DIR/keys (renamed into place) are typed on it.
Its child, a session leader on the slave, acts as the shell: it runs PROG as
a foreground job (its own group, the terminal's foreground), and when the job
is gone takes the terminal back in cooked mode with echo (as a shell does);
then, once DIR/restore.cmd exists, runs that command line the same way (a
new foreground job: `memdump restore --shell-job ...`) and writes its exit
status to DIR/restore.status.
"""
import fcntl, os, shlex, signal, struct, sys, termios, time

d, prog = sys.argv[1], sys.argv[2:]


def job(argv):
    """Run argv as the foreground job, wait for it, take the terminal back."""
    saved = termios.tcgetattr(0)
    pid = os.fork()
    if pid == 0:
        os.setpgid(0, 0)
        os.tcsetpgrp(0, os.getpid())
        signal.signal(signal.SIGTTOU, signal.SIG_DFL)
        os.execvp(argv[0], argv)
    os.setpgid(pid, pid)
    _, st = os.waitpid(pid, 0)
    os.tcsetpgrp(0, os.getpgrp())
    termios.tcsetattr(0, termios.TCSANOW, saved)
    fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))  # resized meanwhile
    return st


def shell():
    signal.signal(signal.SIGTTOU, signal.SIG_IGN)
    job(prog)
    while not os.path.exists(os.path.join(d, "restore.cmd")):
        time.sleep(0.05)
    time.sleep(0.1)
    with open(os.path.join(d, "restore.cmd")) as f:
        st = job(shlex.split(f.read()))
    with open(os.path.join(d, "restore.status"), "w") as f:
        f.write("%d\n" % os.waitstatus_to_exitcode(st))
    os._exit(0)


m, s = os.openpty()
fcntl.ioctl(m, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 120, 0, 0))
pid = os.fork()
if pid == 0:
    try:
        os.setsid()
        fcntl.ioctl(s, termios.TIOCSCTTY, 0)
        for n in (0, 1, 2):
            os.dup2(s, n)
        os.close(s)
        os.close(m)
        shell()
    finally:
        os._exit(1)
os.close(s)
log = open(os.path.join(d, "pty.log"), "ab", buffering=0)
keys = os.path.join(d, "keys")
os.set_blocking(m, False)
while True:
    try:
        b = os.read(m, 4096)
        if not b:
            break
        log.write(b)
    except BlockingIOError:
        pass
    except OSError:
        break
    if os.path.exists(keys):
        with open(keys, "rb") as f:
            os.write(m, f.read())
        os.unlink(keys)
    if os.waitpid(pid, os.WNOHANG)[0]:
        break
    time.sleep(0.02)
