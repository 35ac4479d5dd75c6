// `console tui`: an interactive ncurses screen over the planner and the router — panes for
// placement versions, experiments and the cluster (tui_model.h draws them), refreshed every
// second. A service that does not answer shows a banner and is retried on every refresh; the
// terminal is restored on every way out (q, Ctrl-C, SIGTERM, an error).
#ifndef SEMMOE_CONSOLE_TUI_H_
#define SEMMOE_CONSOLE_TUI_H_

#include "absl/status/status.h"
#include "console/commands.h"

namespace semmoe::console {

absl::Status RunTui(const ConsoleOptions& options);

}  // namespace semmoe::console

#endif  // SEMMOE_CONSOLE_TUI_H_
