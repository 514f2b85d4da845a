# Echoes the first connection that brings bytes (read to EOF, sent back);
# connections their clients gave up (reset, empty) are closed and skipped.
# Writes its pid to PIDFILE once listening. "after-stop": accepts only
# once stopped (SIGSTOP) and continued, a second after, so that whatever
# came meanwhile is queued (a client's abandoned rsocket connect and its
# kernel connection both).
#   python3 nb_server.py HOST PORT PIDFILE [after-stop]
import os, signal, socket, sys, time

host, port = sys.argv[1], int(sys.argv[2])
l = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind((host, port))
l.listen(8)
continued = []
signal.signal(signal.SIGCONT, lambda *_: continued.append(1))
with open(sys.argv[3], "w") as f:
    f.write(str(os.getpid()))
if sys.argv[4:] == ["after-stop"]:
    while not continued:
        time.sleep(0.05)
    time.sleep(1)
while True:
    c, _ = l.accept()
    data = b""
    try:
        while True:
            b = c.recv(65536)
            if not b:
                break
            data += b
    except OSError:
        data = b""  # one its client gave up
    if data:
        c.sendall(data)
        break
    c.close()
