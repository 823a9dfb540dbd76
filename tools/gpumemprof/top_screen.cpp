#include "top_screen.h"

#include <curses.h>
#include <langinfo.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <clocale>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "top_detail.h"
#include "top_table.h"

namespace gmp::tool::top {
namespace {

std::string interval_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g s", s);
  return buf;
}

// Which row is selected, by what it shows, so that it stays selected when the rows move.
struct Selection {
  std::string run_dir;
  int slot = -1;
};

class Screen {
 public:
  Screen(reader::LiveReader& reader, const ScreenOptions& options, bool utf8)
      : reader_(reader), options_(options), utf8_(utf8) {}

  int loop() {
    refresh_figures();
    const uint64_t interval_ns = static_cast<uint64_t>(std::llround(options_.interval_s * 1e9));
    uint64_t next = clock_ns(CLOCK_MONOTONIC) + interval_ns;
    for (;;) {
      draw();
      const uint64_t now = clock_ns(CLOCK_MONOTONIC);
      const int wait_ms = now >= next ? 0 : static_cast<int>((next - now + 999'999) / 1'000'000);
      timeout(paused_ ? -1 : wait_ms);
      const int key = getch();
      if (key == ERR) {
        if (clock_ns(CLOCK_MONOTONIC) >= next) {
          if (!paused_) refresh_figures();
          next = clock_ns(CLOCK_MONOTONIC) + interval_ns;
        }
        continue;
      }
      if (!handle(key)) return 0;
      if (!paused_ && clock_ns(CLOCK_MONOTONIC) >= next) {
        refresh_figures();
        next = clock_ns(CLOCK_MONOTONIC) + interval_ns;
      }
    }
  }

 private:
  void refresh_figures() {
    if (options_.command_status) command_status_ = options_.command_status();
    now_ns_ = clock_ns(CLOCK_REALTIME);
    scan_ = reader_.refresh(now_ns_);
    rows_ = build_rows(scan_, now_ns_);
    resort();
    // The detail keeps its process's last snapshot when it is no longer listed.
    if (detail_) {
      for (const reader::LiveProcess& p : scan_.processes) {
        if (p.run_dir == detail_->run_dir) *detail_ = p;
      }
    }
  }

  void resort() {
    sort_rows(rows_, sort_, reversed_);
    selected_ = 0;
    for (size_t i = 0; i < rows_.size(); ++i) {
      const reader::LiveProcess& p = scan_.processes[rows_[i].process];
      if (p.run_dir == selection_.run_dir && rows_[i].slot == selection_.slot) selected_ = i;
    }
    remember();
  }

  void remember() {
    if (selected_ < rows_.size()) {
      selection_ = {scan_.processes[rows_[selected_].process].run_dir, rows_[selected_].slot};
    }
  }

  // False to quit.
  bool handle(int key) {
    if (key == KEY_RESIZE) {
      // draw() lays out for the new size; the terminal may have reflowed what it showed (tmux
      // does), so all of it is drawn again, not only what changed.
      clearok(curscr, TRUE);
      return true;
    }
    if (key == 'p' || key == 'P') {
      paused_ = !paused_;
      return true;
    }
    if (detail_) {
      switch (key) {
        case 27: case KEY_BACKSPACE: case 127: case 8: case 'q': case KEY_LEFT:
          detail_.reset();
          detail_top_ = 0;
          return true;
        case KEY_UP: if (detail_top_ > 0) --detail_top_; return true;
        case KEY_DOWN: ++detail_top_; return true;
        default: return true;
      }
    }
    switch (key) {
      case 'q': case 'Q': return false;
      case '<': case ',': case KEY_LEFT: sort_ = (sort_ + kColumnCount - 1) % kColumnCount; resort(); break;
      case '>': case '.': case KEY_RIGHT: sort_ = (sort_ + 1) % kColumnCount; resort(); break;
      case 'r': case 'R': reversed_ = !reversed_; resort(); break;
      case KEY_UP: if (selected_ > 0) --selected_; remember(); break;
      case KEY_DOWN: if (selected_ + 1 < rows_.size()) ++selected_; remember(); break;
      case '\n': case '\r': case KEY_ENTER:
        if (selected_ < rows_.size()) detail_ = scan_.processes[rows_[selected_].process];
        break;
      default: break;
    }
    return true;
  }

  void line(int y, const std::string& text, attr_t attr = A_NORMAL) {
    if (y >= LINES) return;
    const std::string shown = cut_to_width(text, static_cast<size_t>(COLS));
    attron(attr);
    mvaddstr(y, 0, shown.c_str());
    attroff(attr);
  }

  void draw() {
    erase();
    const size_t width = static_cast<size_t>(std::max(COLS, 1));
    std::string head = "gpumemprof top  " + header_text(scan_.processes.size(), now_ns_) + "  every " +
                       interval_text(options_.interval_s) + "  sort " + column_title(sort_) +
                       (sorted_descending(sort_, reversed_) ? " (descending)" : " (ascending)");
    if (paused_) head = "PAUSED  " + head;
    line(0, head, paused_ ? A_BOLD : A_NORMAL);
    if (detail_) {
      const std::vector<std::string> lines = detail_lines(*detail_, now_ns_, width, utf8_, sites_);
      const int room = std::max(LINES - 2, 0);
      detail_top_ = std::min(detail_top_, lines.size() > static_cast<size_t>(room) ? lines.size() - room : 0);
      for (int y = 0; y < room && detail_top_ + y < lines.size(); ++y) line(1 + y, lines[detail_top_ + y]);
      line(LINES - 1, "Esc/Backspace/q back  up/down scroll  p pause", A_DIM);
    } else {
      draw_table(width);
    }
    refresh();
  }

  void draw_table(size_t width) {
    const std::vector<std::string> lines = table_lines(rows_, width);
    line(1, lines[0], A_REVERSE);
    // Rows below the header, above the status line; scrolled so that the selection shows.
    const int room = std::max(LINES - 3, 0);
    if (selected_ < top_) top_ = selected_;
    if (room > 0 && selected_ >= top_ + static_cast<size_t>(room)) top_ = selected_ - room + 1;
    top_ = std::min(top_, rows_.size());
    for (int y = 0; y < room && top_ + y < rows_.size(); ++y) {
      const size_t i = top_ + y;
      line(2 + y, lines[i + 1], i == selected_ ? A_REVERSE | A_BOLD : A_NORMAL);
    }
    std::string status;
    if (!scan_.error.empty()) status = scan_.error;
    else if (!command_status_.empty()) status = command_status_;
    else if (rows_.empty()) status = "no profiled process found in " + options_.source;
    else if (!scan_.unreadable.empty()) status = std::to_string(scan_.unreadable.size()) + " live file(s) unreadable: " + scan_.unreadable[0];
    else status = "q quit  </> sort  r reverse  up/down select  Enter detail  p pause";
    if (LINES >= 3) line(LINES - 1, status, A_DIM);
  }

  reader::LiveReader& reader_;
  const ScreenOptions& options_;
  bool utf8_;
  SiteLabels sites_;
  reader::LiveScan scan_;
  std::vector<Row> rows_;
  uint64_t now_ns_ = 0;
  std::string command_status_;
  int sort_ = kAllocated;
  bool reversed_ = false;
  bool paused_ = false;
  size_t selected_ = 0, top_ = 0;
  Selection selection_;
  std::optional<reader::LiveProcess> detail_;
  size_t detail_top_ = 0;
};

}  // namespace

uint64_t clock_ns(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000 + static_cast<uint64_t>(ts.tv_nsec);
}

std::string header_text(size_t processes, uint64_t now_ns) {
  const reader::ThisMachine here = reader::this_machine();
  const time_t t = static_cast<time_t>(now_ns / 1'000'000'000);
  tm local{};
  localtime_r(&t, &local);
  char clock[16];
  std::strftime(clock, sizeof clock, "%H:%M:%S", &local);
  return "host " + here.host + "  " + std::to_string(processes) + (processes == 1 ? " process" : " processes") +
         "  " + clock;
}

int run_screen(reader::LiveReader& reader, const ScreenOptions& options, std::string& why) {
  // The character type only: numbers keep the C locale's decimal point.
  std::setlocale(LC_CTYPE, "");
  const bool utf8 = std::strcmp(nl_langinfo(CODESET), "UTF-8") == 0;
  const char* term = std::getenv("TERM");
  if (term == nullptr || *term == '\0') {
    why = "TERM is not set";
    return -1;
  }
  // Our own stream for the screen: stdout is routed through the text filter (output_streams.h),
  // which would take the terminal's escape sequences for text to neutralise.
  const int fd = dup(STDOUT_FILENO);
  FILE* out = fd < 0 ? nullptr : fdopen(fd, "w");
  if (out == nullptr) {
    if (fd >= 0) close(fd);
    why = std::string("cannot open the terminal: ") + std::strerror(errno);
    return -1;
  }
  // The terminal's own size, and its changes: LINES and COLUMNS in the environment are often
  // stale, or set for the line-oriented outputs (docs/report.md, "Width"), and ncurses would take
  // them over the terminal's size, even after a resize. Put back for the table printed instead
  // when the screen cannot be used.
  const char* lines_env = std::getenv("LINES");
  const char* columns_env = std::getenv("COLUMNS");
  const std::string saved_lines = lines_env ? lines_env : "", saved_columns = columns_env ? columns_env : "";
  unsetenv("LINES");
  unsetenv("COLUMNS");
  SCREEN* screen = newterm(nullptr, out, stdin);
  if (screen == nullptr) {
    if (lines_env) setenv("LINES", saved_lines.c_str(), 1);
    if (columns_env) setenv("COLUMNS", saved_columns.c_str(), 1);
    std::fclose(out);
    why = std::string("the terminal type '") + term + "' is unknown to this system's terminfo";
    return -1;
  }
  set_term(screen);
  cbreak();
  noecho();
  keypad(stdscr, TRUE);
  set_escdelay(50);
  curs_set(0);
  int status = 0;
  {
    Screen s(reader, options, utf8);
    status = s.loop();
  }
  endwin();
  delscreen(screen);
  std::fclose(out);
  return status;
}

}  // namespace gmp::tool::top
