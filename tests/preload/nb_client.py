# A non-blocking connect as event loops make it: connect (EINPROGRESS),
# writable by poll, select or epoll (asyncio), SO_ERROR 0; then stdin's
# bytes sent, the echo copied to stdout. "epoll": one epoll set, the
# socket registered once while it connects (EPOLLOUT), then modified to
# EPOLLIN (ENOENT if the set lost it) and the echo read as it reports it.
# "blocking": no wait, the socket made blocking at once, its first send
# waits for the connect (Linux's rule).
#   python3 nb_client.py HOST PORT poll|select|epoll|asyncio|blocking <in >out
import asyncio, errno, select, socket, sys

host, port, how = sys.argv[1], int(sys.argv[2]), sys.argv[3]
data = sys.stdin.buffer.read()
if how == "asyncio":  # epoll: the socket joins the set while it connects
    async def main():
        r, w = await asyncio.open_connection(host, port)
        w.write(data)
        await w.drain()
        w.write_eof()
        sys.stdout.buffer.write(await r.read())
        w.close()
    asyncio.run(main())
    sys.exit(0)
s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
s.setblocking(False)
rc = s.connect_ex((host, port))
if rc != errno.EINPROGRESS:
    sys.exit("connect: %s, wanted EINPROGRESS" % errno.errorcode.get(rc, rc))
if how != "blocking":
    if how == "epoll":
        ep = select.epoll()
        ep.register(s, select.EPOLLOUT)
        ready = ep.poll(30)
    elif how == "poll":
        p = select.poll()
        p.register(s, select.POLLOUT)
        ready = p.poll(30000)
    else:
        ready = select.select([], [s], [], 30)[1]
    if not ready:
        sys.exit("never writable")
    err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
    if err:
        sys.exit("SO_ERROR " + errno.errorcode.get(err, str(err)))
s.setblocking(True)
s.sendall(data)
s.shutdown(socket.SHUT_WR)
if how == "epoll":
    ep.modify(s, select.EPOLLIN)
while True:
    if how == "epoll" and not ep.poll(30):
        sys.exit("epoll: no EPOLLIN")
    b = s.recv(65536)
    if not b:
        break
    sys.stdout.buffer.write(b)
