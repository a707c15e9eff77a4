#include "driver/progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>

namespace mugraph::driver {

namespace {
std::atomic<bool> g_shown{false};

bool periodic(const std::string& line) {
  // The search's periodic status lines start "search: <seconds> s"; anything else is a note.
  return line.size() > 8 && line.compare(0, 8, "search: ") == 0 &&
         (line[8] >= '0' && line[8] <= '9');
}
}  // namespace

std::function<void(const std::string&)> terminal_progress() {
  const bool tty = ::isatty(STDERR_FILENO) == 1;
  return [tty](const std::string& line) {
    if (!periodic(line)) {
      std::fprintf(stderr, "%s%s\n", g_shown.exchange(false) ? "\r\033[K" : "", line.c_str());
    } else if (tty) {
      // Cut to the terminal's width: a wrapped line would leave its first rows behind.
      winsize ws{};
      size_t width = ::ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1 ? ws.ws_col - 1 : 79;
      std::fprintf(stderr, "\r\033[K%s", line.substr(0, width).c_str());
      g_shown = true;
    }
    std::fflush(stderr);
  };
}

void end_progress() {
  if (g_shown.exchange(false)) {
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
  }
}

}  // namespace mugraph::driver
