// The Java cases of preload_cases.sh and vma_runtimes.sh: a TCP echo
// server (blocking java.net, a thread per connection; or NIO, one
// Selector), a client of N connections each sending M MiB while it reads
// the echo back, and a UDP echo pair (DatagramChannel, DatagramSocket).
// Java's sockets are IPv6 ones reaching IPv4 by mapped addresses.
//   java_echo block|nio HOST PORT      prints "ready", serves until killed
//   java_echo client HOST PORT N M     prints "clients N bad B"
//   java_echo udp-server HOST PORT     prints "ready", echoes until killed
//   java_echo udp-client HOST PORT N   prints "udp ok K of 2N"
import java.io.*;
import java.net.*;
import java.nio.ByteBuffer;
import java.nio.channels.*;
import java.util.*;

class JavaEcho {
  public static void main(String[] a) throws Exception {
    InetSocketAddress at = new InetSocketAddress(a[1], Integer.parseInt(a[2]));
    switch (a[0]) {
      case "block": block(at); break;
      case "nio": nio(at); break;
      case "client": client(at, Integer.parseInt(a[3]), Integer.parseInt(a[4])); break;
      case "udp-server": udpServer(at); break;
      case "udp-client": udpClient(at, Integer.parseInt(a[3])); break;
      default: throw new IllegalArgumentException(a[0]);
    }
  }

  static void ready() {
    System.out.println("ready");
    System.out.flush();
  }

  static void block(InetSocketAddress at) throws IOException {
    ServerSocket ss = new ServerSocket();
    ss.bind(at);
    ready();
    while (true) {
      Socket s = ss.accept();
      new Thread(() -> {
        try (s) {
          InputStream in = s.getInputStream();
          OutputStream out = s.getOutputStream();
          byte[] b = new byte[65536];
          for (int n; (n = in.read(b)) > 0;) out.write(b, 0, n);
        } catch (IOException e) {
          System.out.println("server: " + e);
        }
      }).start();
    }
  }

  // Each connection's buffer holds what was read and not yet echoed; the
  // key waits for writability while it is not empty.
  static void nio(InetSocketAddress at) throws IOException {
    Selector sel = Selector.open();
    ServerSocketChannel ss = ServerSocketChannel.open();
    ss.bind(at);
    ss.configureBlocking(false);
    ss.register(sel, SelectionKey.OP_ACCEPT);
    ready();
    while (true) {
      sel.select();
      for (Iterator<SelectionKey> it = sel.selectedKeys().iterator(); it.hasNext();) {
        SelectionKey k = it.next();
        it.remove();
        if (k.isAcceptable()) {
          SocketChannel c = ss.accept();
          if (c == null) continue;
          c.configureBlocking(false);
          c.register(sel, SelectionKey.OP_READ, ByteBuffer.allocateDirect(65536));
          continue;
        }
        SocketChannel c = (SocketChannel) k.channel();
        ByteBuffer b = (ByteBuffer) k.attachment();
        int n = k.isReadable() ? c.read(b) : 0;
        b.flip();
        c.write(b);
        b.compact();
        if (n < 0 && b.position() == 0) {
          c.close();
          continue;
        }
        k.interestOps(b.position() > 0 ? SelectionKey.OP_WRITE : SelectionKey.OP_READ);
      }
    }
  }

  static void client(InetSocketAddress at, int conns, int mib) throws Exception {
    Thread[] t = new Thread[conns];
    int[] bad = {0};
    for (int i = 0; i < conns; i++) {
      final int id = i;
      t[i] = new Thread(() -> {
        try (Socket s = new Socket(at.getAddress(), at.getPort())) {
          byte[] data = new byte[mib << 20];
          new Random(id).nextBytes(data);
          Thread w = new Thread(() -> {
            try {
              s.getOutputStream().write(data);
              s.shutdownOutput();
            } catch (IOException e) {
              System.out.println("writer: " + e);
            }
          });
          w.start();
          InputStream in = s.getInputStream();
          byte[] got = new byte[data.length];
          int off = 0;
          for (int n; off < got.length && (n = in.read(got, off, got.length - off)) > 0;) off += n;
          w.join();
          if (!Arrays.equals(data, got) || in.read() != -1) throw new IOException("echo differs");
        } catch (Exception e) {
          System.out.println("client " + id + ": " + e);
          synchronized (bad) {
            bad[0]++;
          }
        }
      });
      t[i].start();
    }
    for (Thread x : t) x.join();
    System.out.println("clients " + conns + " bad " + bad[0]);
  }

  static void udpServer(InetSocketAddress at) throws IOException {
    DatagramSocket s = new DatagramSocket(at);
    ready();
    byte[] b = new byte[2048];
    while (true) {
      DatagramPacket p = new DatagramPacket(b, b.length);
      s.receive(p);
      s.send(p);
    }
  }

  static void udpClient(InetSocketAddress to, int n) throws IOException {
    int ok = 0;
    try (DatagramChannel ch = DatagramChannel.open(); DatagramSocket s = new DatagramSocket()) {
      ch.connect(to);
      ByteBuffer out = ByteBuffer.allocate(64), in = ByteBuffer.allocate(2048);
      for (int i = 0; i < n; i++) {
        out.clear();
        out.putInt(i).position(64).flip();
        ch.write(out);
        in.clear();
        ch.read(in);
        if (in.flip().remaining() == 64 && in.getInt() == i) ok++;
      }
      s.setSoTimeout(5000);
      for (int i = 0; i < n; i++) {
        byte[] d = ByteBuffer.allocate(64).putInt(i).array();
        s.send(new DatagramPacket(d, d.length, to));
        DatagramPacket p = new DatagramPacket(new byte[2048], 2048);
        s.receive(p);
        if (p.getLength() == 64 && ByteBuffer.wrap(p.getData()).getInt() == i) ok++;
      }
    }
    System.out.println("udp ok " + ok + " of " + 2 * n);
  }
}
