#include "console/tui.h"

#include <curses.h>
#include <langinfo.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <clocale>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/json_fields.h"
#include "common/security.h"
#include "console/tui_model.h"
#include "engine/proto/engine.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "nlohmann/json.hpp"

namespace semmoe::console {
namespace {

namespace prpc = planner::rpc;
namespace rrpc = router::rpc;

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop = true; }

// Restores the terminal however the function returns.
struct Curses {
  Curses() {
    setlocale(LC_ALL, "");  // UTF-8 output (ncursesw) where the terminal's locale has it.
    initscr();
    cbreak();
    noecho();
    keypad(stdscr, TRUE);
    curs_set(0);
    timeout(1000);  // getch waits at most a second: the refresh period.
  }
  ~Curses() { endwin(); }
};

bool Utf8() {
  const char* codeset = nl_langinfo(CODESET);
  return codeset != nullptr && std::string(codeset) == "UTF-8";
}

class Tui {
 public:
  explicit Tui(const ConsoleOptions& o) : o_(o) {
    planner_ = prpc::PlannerService::NewStub(semmoe::NewChannel(o.planner));
    router_ = rrpc::RouterService::NewStub(semmoe::NewChannel(o.router));
  }

  void Refresh() {
    Snapshot s;
    auto context = [](grpc::ClientContext& c) {
      c.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(700));
    };
    {
      grpc::ClientContext c;
      context(c);
      prpc::ListVersionsRequest r;
      r.set_model(o_.model);
      prpc::ListVersionsResponse response;
      const grpc::Status st = planner_->ListVersions(&c, r, &response);
      s.planner_ok = st.ok();
      if (st.ok()) {
        s.versions.assign(response.versions().rbegin(),
                          response.versions().rend());  // Newest first.
        grpc::ClientContext c2;
        context(c2);
        prpc::ListExperimentsRequest er;
        er.set_model(o_.model);
        prpc::ListExperimentsResponse experiments;
        if (planner_->ListExperiments(&c2, er, &experiments).ok()) {
          s.experiments.assign(experiments.experiments().rbegin(),
                               experiments.experiments().rend());
        }
        grpc::ClientContext c3;
        context(c3);
        prpc::ListAutopilotDecisionsRequest ar;
        ar.set_model(o_.model);
        ar.set_limit(10);
        prpc::ListAutopilotDecisionsResponse decisions;
        if (planner_->ListAutopilotDecisions(&c3, ar, &decisions).ok()) {
          s.autopilot.assign(decisions.decisions().begin(), decisions.decisions().end());
        }
      } else {
        s.planner_error = st.error_message();
      }
    }
    {
      grpc::ClientContext c;
      context(c);
      const grpc::Status st = router_->GetStats(&c, rrpc::GetStatsRequest(), &s.router);
      s.router_ok = st.ok();
      if (!st.ok()) s.router_error = st.error_message();
    }
    // LAR per MoE layer, from the engines behind the router.
    std::map<int, std::pair<int64_t, int64_t>> layers;
    std::map<int, Snapshot::NodeBytes> node_bytes;
    for (const rrpc::RankStats& r : s.router.ranks()) {
      auto stub = engine::rpc::EngineService::NewStub(semmoe::NewChannel(r.address()));
      grpc::ClientContext c;
      c.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(300));
      engine::rpc::EngineStats e;
      if (!stub->GetStats(&c, engine::rpc::GetStatsRequest(), &e).ok()) continue;
      if (!e.topology().empty()) {
        s.topology = e.topology() + (e.node_dedup() ? " (node dedup)" : "");
      }
      for (const engine::rpc::MoeLayerStats& l : e.layers()) {
        layers[l.layer()].first += l.local_activations();
        layers[l.layer()].second += l.remote_activations();
        Snapshot::NodeBytes& b = node_bytes[l.layer()];
        b.layer = l.layer();
        b.cross += l.cross_node_bytes_sent();
        b.intra += l.intra_node_bytes_sent();
      }
    }
    for (const auto& [layer, b] : node_bytes) s.layer_node_bytes.push_back(b);
    for (const auto& [layer, c] : layers) {
      const int64_t all = c.first + c.second;
      s.layer_lar.push_back({layer, all == 0 ? 0.0 : static_cast<double>(c.first) / all});
    }
    const absl::Time now = absl::Now();
    if (s.router_ok && last_completed_ >= 0) {
      const double dt = absl::ToDoubleSeconds(now - last_time_);
      if (dt > 0) throughput_.push_back((s.router.completed() - last_completed_) / dt);
      while (throughput_.size() > 60) throughput_.pop_front();
    }
    if (s.router_ok) {
      last_completed_ = s.router.completed();
      last_time_ = now;
    }
    snapshot_ = std::move(s);
  }

  void Draw() {
    erase();
    int h, w;
    getmaxyx(stdscr, h, w);
    // Title bar with the pane tabs.
    attron(A_REVERSE);
    mvhline(0, 0, ' ', w);
    const char* names[] = {"[1] placements", "[2] experiments", "[3] cluster"};
    int x = 1;
    mvaddnstr(0, x, "Sem-MoE console", w - x);
    x += 17;
    for (int i = 0; i < 3; ++i) {
      if (static_cast<int>(pane_) == i) attron(A_BOLD | A_UNDERLINE);
      mvaddnstr(0, x, names[i], std::max(0, w - x));
      if (static_cast<int>(pane_) == i) attroff(A_BOLD | A_UNDERLINE);
      x += static_cast<int>(std::string(names[i]).size()) + 2;
    }
    mvaddnstr(0, std::max(x, w - 22), "  ? help   q quit", std::max(0, w - std::max(x, w - 22)));
    attroff(A_REVERSE);
    int y = 1;
    auto banner = [&](const std::string& text) {
      attron(A_BOLD);
      mvaddnstr(y++, 0, text.c_str(), w);
      attroff(A_BOLD);
    };
    for (const std::string& text : Banners(snapshot_, o_.planner, o_.router)) banner(text);
    mvaddnstr(y++, 0,
              absl::StrCat("model ", o_.model, " | planner ", o_.planner, " | router ", o_.router)
                  .c_str(),
              w);
    std::vector<std::string> lines;
    if (!overlay_.empty()) {
      lines = overlay_;
    } else if (pane_ == Pane::kPlacements) {
      lines = PlacementLines(snapshot_, selected_[0], w);
    } else if (pane_ == Pane::kExperiments) {
      lines = ExperimentLines(snapshot_, selected_[1], w);
    } else {
      lines = ClusterLines(snapshot_, throughput_, w, Utf8());
    }
    for (const std::string& line : lines) {
      if (y >= h - 1) break;
      const bool chosen = !line.empty() && line[0] == '>';
      if (chosen) attron(A_REVERSE);
      mvaddnstr(y++, 0, line.c_str(), w);
      if (chosen) attroff(A_REVERSE);
    }
    mvaddnstr(h - 1, 0, status_.c_str(), w);
    refresh();
  }

  // y/n on the status line.
  bool Ask(const std::string& question) {
    status_ = question + " (y/n)";
    Draw();
    timeout(-1);
    const int key = getch();
    timeout(1000);
    return key == 'y' || key == 'Y';
  }

  int Count() const {
    return static_cast<int>(pane_ == Pane::kPlacements ? snapshot_.versions.size()
                                                       : snapshot_.experiments.size());
  }

  void Key(int key) {
    if (!overlay_.empty()) {  // Any key closes help or a diff.
      overlay_.clear();
      return;
    }
    int& sel = selected_[pane_ == Pane::kExperiments ? 1 : 0];
    switch (key) {
      case '1':
        pane_ = Pane::kPlacements;
        break;
      case '2':
        pane_ = Pane::kExperiments;
        break;
      case '3':
        pane_ = Pane::kCluster;
        break;
      case '\t':
        pane_ = static_cast<Pane>((static_cast<int>(pane_) + 1) % 3);
        break;
      case KEY_UP:
      case 'k':
        sel = std::max(0, sel - 1);
        break;
      case KEY_DOWN:
      case 'j':
        sel = std::min(std::max(0, Count() - 1), sel + 1);
        break;
      case '?':
        overlay_ = HelpLines();
        break;
      case '\n':
      case '\r':
      case KEY_ENTER:
        if (pane_ == Pane::kPlacements && !snapshot_.versions.empty()) {
          overlay_ = VersionDetails(
              snapshot_.versions[std::min<size_t>(sel, snapshot_.versions.size() - 1)]);
        }
        break;
      case 'r':
        Refresh();
        break;
      case 'a':
        if (pane_ == Pane::kPlacements) Activate();
        break;
      case 'd':
        if (pane_ == Pane::kPlacements) Diff();
        break;
      case 'p':
        if (pane_ == Pane::kExperiments) Promote();
        break;
      case 's':
        if (pane_ == Pane::kExperiments) Stop();
        break;
      default:
        break;
    }
  }

  void Activate() {
    if (snapshot_.versions.empty()) return;
    const auto& v =
        snapshot_.versions[std::min<size_t>(selected_[0], snapshot_.versions.size() - 1)];
    if (!Ask(absl::StrCat("activate version ", v.version(), " (", v.name(), ")?"))) {
      status_ = "not activated";
      return;
    }
    grpc::ClientContext c;
    c.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    prpc::ActivateRequest r;
    r.set_version(v.version());
    prpc::ActivateResponse response;
    const grpc::Status st = planner_->Activate(&c, r, &response);
    status_ = st.ok() ? absl::StrCat("version ", v.version(), " is active")
                      : absl::StrCat("activate failed: ", st.error_message());
    Refresh();
  }

  void Diff() {
    if (snapshot_.versions.empty()) return;
    const auto& v =
        snapshot_.versions[std::min<size_t>(selected_[0], snapshot_.versions.size() - 1)];
    int64_t active = 0;
    for (const auto& x : snapshot_.versions) {
      if (x.status() == "active") active = x.version();
    }
    if (active == 0 || active == v.version()) {
      status_ = "diff: select a version other than the active one";
      return;
    }
    grpc::ClientContext c;
    c.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    prpc::DiffRequest r;
    r.set_from(active);
    r.set_to(v.version());
    prpc::Report report;
    const grpc::Status st = planner_->DiffVersions(&c, r, &report);
    if (!st.ok()) {
      status_ = absl::StrCat("diff failed: ", st.error_message());
      return;
    }
    const nlohmann::json d = ParseJsonOrDiscarded(report.json());
    overlay_ = {absl::StrCat("diff: active version ", active, " → ", v.version(), ": ",
                             d.value("moved", 0), " of ", d.value("experts", 0), " experts move"),
                absl::StrCat("  per layer: ", d["moved_per_layer"].dump())};
    for (const auto& [key, change] : d["change"].items()) {
      overlay_.push_back(absl::StrCat("  ", key, ": ", d["metrics_from"][key].dump(), " → ",
                                      d["metrics_to"][key].dump(), " (", change.dump(), ")"));
    }
    overlay_.push_back("(any key closes)");
  }

  void Promote() {
    if (snapshot_.experiments.empty()) return;
    const auto& e =
        snapshot_.experiments[std::min<size_t>(selected_[1], snapshot_.experiments.size() - 1)];
    std::string arm;
    double best = -1;
    for (const auto& a : e.arms()) {
      const nlohmann::json m = ParseJsonOrDiscarded(a.latest_metrics_json());
      const double g =
          m.is_object() && m.contains("goodput_rps") ? m["goodput_rps"].get<double>() : -1;
      if (g > best) best = g, arm = a.name();
    }
    if (best < 0) {
      status_ = "promote: no arm has recorded metrics yet";
      return;
    }
    if (!Ask(absl::StrCat("promote arm ", arm, " of experiment ", e.id(), "?"))) {
      status_ = "not promoted";
      return;
    }
    grpc::ClientContext c;
    c.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    prpc::PromoteExperimentRequest r;
    r.set_id(e.id());
    r.set_arm(arm);
    prpc::Experiment done;
    const grpc::Status st = planner_->PromoteExperiment(&c, r, &done);
    status_ = st.ok() ? absl::StrCat("arm ", arm, " promoted")
                      : absl::StrCat("promote failed: ", st.error_message());
    Refresh();
  }

  void Stop() {
    if (snapshot_.experiments.empty()) return;
    const auto& e =
        snapshot_.experiments[std::min<size_t>(selected_[1], snapshot_.experiments.size() - 1)];
    if (!Ask(absl::StrCat("stop experiment ", e.id(), "?"))) {
      status_ = "not stopped";
      return;
    }
    grpc::ClientContext c;
    c.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    prpc::ExperimentId r;
    r.set_id(e.id());
    prpc::Experiment done;
    const grpc::Status st = planner_->StopExperiment(&c, r, &done);
    status_ = st.ok() ? absl::StrCat("experiment ", e.id(), " stopped")
                      : absl::StrCat("stop failed: ", st.error_message());
    Refresh();
  }

 private:
  const ConsoleOptions o_;
  std::unique_ptr<prpc::PlannerService::Stub> planner_;
  std::unique_ptr<rrpc::RouterService::Stub> router_;
  Snapshot snapshot_;
  Pane pane_ = Pane::kPlacements;
  int selected_[2] = {0, 0};
  std::vector<std::string> overlay_;
  std::string status_ = "? for keys";
  std::deque<double> throughput_;
  int64_t last_completed_ = -1;
  absl::Time last_time_;
};

}  // namespace

absl::Status RunTui(const ConsoleOptions& options) {
  if (options.model.empty()) return absl::InvalidArgumentError("'tui' needs --model");
  struct sigaction sa = {};
  sa.sa_handler = OnSignal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  Tui tui(options);
  Curses curses;
  tui.Refresh();
  absl::Time next = absl::Now() + absl::Seconds(1);
  while (!g_stop) {
    tui.Draw();
    const int key = getch();
    if (key == 'q' || key == 'Q') break;
    if (key != ERR && key != KEY_RESIZE) tui.Key(key);
    if (absl::Now() >= next) {
      tui.Refresh();
      next = absl::Now() + absl::Seconds(1);
    }
  }
  return absl::OkStatus();
}

}  // namespace semmoe::console
