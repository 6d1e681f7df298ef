#!/usr/bin/python3
# A runtime's console-socket receiver, as runc's recvtty (which Debian's runc
# lacks): listens on SOCK, takes the pty master a runtime sends (SCM_RIGHTS),
# keeps it, appends what it reads from it to OUT, and writes into it what
# arrives on the FIFO IN. With ROWSxCOLS, sets that window size first.
#
#   console-recv.py SOCK OUT IN [ROWSxCOLS]
import fcntl
import os
import select
import socket
import struct
import sys
import termios

sock_path, out_path, in_path = sys.argv[1:4]
size = sys.argv[4] if len(sys.argv) > 4 else None
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(sock_path)
srv.listen(1)
conn, _ = srv.accept()
_, fds, _, _ = socket.recv_fds(conn, 1024, 1)
conn.close()
srv.close()
master = fds[0]
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
