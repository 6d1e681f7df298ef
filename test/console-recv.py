#!/usr/bin/python3
# A runtime's console-socket receiver, as runc's recvtty (which Debian's runc
# lacks): listens on SOCK, takes the pty master a runtime sends (SCM_RIGHTS),
# keeps it, appends what it reads from it to OUT, and writes into it what
# arrives on the FIFO IN. With ROWSxCOLS, sets that window size first.
#
#   console-recv.py SOCK OUT IN [ROWSxCOLS]
#
# With --pty instead of SOCK, it makes a pty pair itself and runs CMD with the
# slave as an extra fd ({fd} in CMD is replaced by its number), then serves
# the master as above (memdump restore --inherit-fd fd[N]:tty[..]):
#
#   console-recv.py --pty OUT IN -- CMD...
import fcntl
import os
import pty
import select
import socket
import struct
import subprocess
import sys
import termios


def from_socket(sock_path):
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(sock_path)
    srv.listen(1)
    conn, _ = srv.accept()
    _, fds, _, _ = socket.recv_fds(conn, 1024, 1)
    conn.close()
    srv.close()
    return fds[0]


def from_command(cmd):
    m, s = pty.openpty()
    cmd = [a.replace('{fd}', str(s)) for a in cmd]
    rc = subprocess.call(cmd, pass_fds=(s,))
    os.close(s)
    with open(out_path + '.rc', 'w') as f:
        f.write('%d\n' % rc)
    return m


out_path, in_path = sys.argv[2:4]
size = sys.argv[4] if len(sys.argv) > 4 and sys.argv[4] != '--' else None
if sys.argv[1] == '--pty':
    master = from_command(sys.argv[sys.argv.index('--') + 1:])
else:
    master = from_socket(sys.argv[1])
if size:
    rows, cols = (int(x) for x in size.split('x'))
    fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack('HHHH', rows, cols, 0, 0))
with open(out_path + '.ready', 'w') as f:
    f.write('%d\n' % os.getpid())
inp = os.open(in_path, os.O_RDWR | os.O_NONBLOCK)
out = open(out_path, 'ab', buffering=0)
while True:
    r, _, _ = select.select([master, inp], [], [])
    if master in r:
        try:
            data = os.read(master, 4096)
        except OSError:
            data = b''
        if not data:	# every slave closed (EIO): keep the master, wait for input
            r = []
            select.select([inp], [], [], 0.2)
        out.write(data)
    if inp in r:
        os.write(master, os.read(inp, 4096))
