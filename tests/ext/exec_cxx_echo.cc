// preload_exec.sh's C++ image: echoes BYTES from std::cin to std::cout
// (its stdin and stdout: a connection carried across exec), then says
// on stderr how many it echoed.
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const size_t bytes = std::strtoul(argv[1], nullptr, 10);
  std::vector<char> buf(65536);
  size_t done = 0;
  while (done < bytes && std::cin) {
    std::cin.read(buf.data(), static_cast<std::streamsize>(std::min(buf.size(), bytes - done)));
    const std::streamsize n = std::cin.gcount();
    if (n <= 0) break;
    if (!std::cout.write(buf.data(), n).flush()) break;
    done += static_cast<size_t>(n);
  }
  std::cerr << "echoed " << done << std::endl;
  return done == bytes ? 0 : 4;
}
