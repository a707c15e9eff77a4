// The search's progress line on a terminal (issue 21 item 6): one line on stderr, rewritten in
// place about once a second ("search: 12.0 s, ~2761041 prefixes (230086/s), tasks 512/1067,
// 42 candidates, best model 22.6 us" -- the cost model's fastest candidate of the part being
// searched: of the whole program when it is one Lax part), cut to the terminal's width), cleared when the search ends. When stderr is not a
// terminal nothing periodic is printed (logs stay clean); one-off notes such as "search:
// resuming; ..." are printed as lines either way.
#pragma once

#include <functional>
#include <string>

namespace mugraph::driver {

// The callback for SearchOptions::progress.
std::function<void(const std::string&)> terminal_progress();
// Clears the progress line (if one is shown); call when the search returned.
void end_progress();

}  // namespace mugraph::driver
