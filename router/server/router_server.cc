#include "router/server/router_server.h"

#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/file.h"
#include "common/grpc_status.h"
#include "common/json_fields.h"
#include "common/security.h"
#include "common/status_macros.h"
#include "engine/text/config.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "planner/placement/topology.h"
#include "planner/proto/planner.grpc.pb.h"
#include "planner/sim/cluster_profile.h"
#include "engine/text/sim_shape.h"
#include "planner/sim/step_predictor.h"
#include "router/openai/tool_use.h"
#include "router/tables/fetch_tables.h"

namespace semmoe::router {
namespace {

constexpr char kNoTables[] =
    "no affinity tables (give --affinity and --placement, or --planner): the semantic policy "
    "places by load alone";

// Puts a version's fetched tables in `holder`. Without them the semantic policy would place
// blind: the fetch's error comes back (the caller says whose). Other policies place by load
// anyway; the holder keeps the reason for the stats.
absl::Status HoldFetched(absl::StatusOr<std::shared_ptr<const RouterTables>> fetched, Policy policy,
                         TablesHolder& holder) {
  if (fetched.ok()) {
    holder.Set(*std::move(fetched));
    return absl::OkStatus();
  }
  if (policy == Policy::kSemantic) return fetched.status();
  holder.Set(nullptr, std::string(fetched.status().message()));
  return absl::OkStatus();
}

// The experiment's arms from the planner, each with its engines (options.arms) and its version's
// tables (held in `tables`).
absl::StatusOr<std::vector<GroupOptions>> ExperimentGroups(
    const RouterServerOptions& o, uint32_t vocab,
    std::vector<std::unique_ptr<TablesHolder>>& tables) {
  auto stub = planner::rpc::PlannerService::NewStub(semmoe::NewChannel(o.planner));
  auto deadline = [] { return std::chrono::system_clock::now() + std::chrono::seconds(10); };
  planner::rpc::ExperimentId eid;
  eid.set_id(o.experiment);
  planner::rpc::Experiment experiment;
  {
    grpc::ClientContext context;
    context.set_deadline(deadline());
    RETURN_IF_ERROR(FromGrpcStatus(stub->GetExperiment(&context, eid, &experiment)));
  }
  if (experiment.status() != "running") {
    return absl::FailedPreconditionError(
        absl::StrCat("experiment ", o.experiment, " is ", experiment.status(),
                     "; start it first (planner experiment start)"));
  }
  std::vector<GroupOptions> groups;
  for (const planner::rpc::ExperimentArm& arm : experiment.arms()) {
    auto it = o.arms.find(arm.name());
    if (it == o.arms.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--arms names no engines for arm '", arm.name(), "'"));
    }
    tables.push_back(std::make_unique<TablesHolder>());
    const int ranks = static_cast<int>(it->second.size());
    if (absl::Status held = HoldFetched(FetchRouterTables(*stub, arm.version(), ranks, vocab),
                                        o.rebatch.policy, *tables.back());
        !held.ok()) {
      // Routed blind, the arm would not be the version as it serves alone: no experiment.
      return absl::FailedPreconditionError(
          absl::StrCat("experiment ", o.experiment, ": arm ", arm.name(),
                       " cannot be routed as planned (", held.message(),
                       "); not starting it. Give the version affinity tables, or "
                       "compare the placements without affinity routing (--policy least_loaded)"));
    }
    groups.push_back({.name = arm.name(),
                      .share_percent = arm.share_percent(),
                      .ranks = it->second,
                      .tables = tables.back().get(),
                      .rebatch = o.rebatch});
  }
  return groups;
}

// --chat_template: the file's template with the model's tokenizer_config.json's tokens (bos, eos)
// when it has one.
absl::StatusOr<engine::model::ChatTemplate> ChatTemplateFromFile(
    const std::string& model_dir, const std::string& file,
    const engine::model::ChatTemplateOptions& options) {
  absl::StatusOr<std::string> text = ReadFlagFile("chat_template", file);
  if (!text.ok()) return text.status();
  if (text->find_first_not_of(" \t\r\n") == std::string::npos) {
    // It would render every conversation as an empty prompt.
    return absl::InvalidArgumentError(absl::StrCat("--chat_template: ", file, " is empty"));
  }
  nlohmann::ordered_json config = nlohmann::ordered_json::object();
  if (absl::StatusOr<std::string> model_config =
          ReadFile(JoinPath(model_dir, "tokenizer_config.json"));
      model_config.ok()) {
    config = ParseOrderedJsonOrDiscarded(*model_config);
    if (!config.is_object()) config = nlohmann::ordered_json::object();
  }
  config["chat_template"] = *std::move(text);
  absl::StatusOr<engine::model::ChatTemplate> t =
      engine::model::ChatTemplate::FromConfig(config, file, options);
  if (!t.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--chat_template: ", t.status().message()));
  }
  return t;
}

// --tool_call_parser: "auto" picks the format the model family's templates teach.
absl::StatusOr<std::optional<openai::ToolCallFormat>> ToolCallFormatFor(
    const std::string& model_dir, const std::string& parser) {
  if (parser == "none") return std::nullopt;
  if (parser != "auto") {
    absl::StatusOr<openai::ToolCallFormat> f = openai::ToolCallFormatFromName(parser);
    if (!f.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--tool_call_parser: ", f.status().message(), ", or auto, none"));
    }
    return std::optional<openai::ToolCallFormat>(*f);
  }
  ASSIGN_OR_RETURN(engine::model::ModelConfig config, engine::model::LoadModelConfig(model_dir));
  switch (config.arch) {
    case engine::model::Arch::kQwen3Moe:
    case engine::model::Arch::kQwen2Moe:
      return std::optional(openai::ToolCallFormat::kHermes);
    case engine::model::Arch::kDeepseekV2:
    case engine::model::Arch::kDeepseekV3:
      return std::optional(openai::ToolCallFormat::kDeepseekV3);
    case engine::model::Arch::kMixtral:
      return std::optional(openai::ToolCallFormat::kMistral);
  }
  return std::nullopt;
}

// The start-up line on tools: what requests with tools get.
std::string ToolsLine(const engine::model::ChatTemplate& t,
                      const std::optional<openai::ToolCallFormat>& format) {
  if (!format.has_value()) return "off (--tool_call_parser=none): requests with tools get a 400";
  if (!t.tool_support().tools_list) {
    return absl::StrCat(
        "WARNING: the chat template does not render 'tools': requests with tools get a 400 "
        "(give --chat_template a template that does",
        *format == openai::ToolCallFormat::kDeepseekV3
            ? ", e.g. router/templates/deepseek_v3_tools.jinja"
            : "",
        "); format ", openai::ToolCallFormatName(*format));
  }
  return absl::StrCat("parsed as ", openai::ToolCallFormatName(*format));
}

}  // namespace

absl::Status ValidateRouterServerOptions(const RouterServerOptions& o) {
  if (o.experiment > 0) {
    if (o.planner.empty() || o.arms.empty()) {
      return absl::InvalidArgumentError("--experiment needs --planner and --arms");
    }
    if (!o.engines.empty() || !o.affinity_file.empty()) {
      return absl::InvalidArgumentError(
          "--experiment takes its engines from --arms and its tables from the planner");
    }
  } else if (o.engines.empty()) {
    return absl::InvalidArgumentError("--engines is required");
  }
  if (o.model_dir.empty()) {
    return absl::InvalidArgumentError("--model is required (for the tokenizer and vocabulary)");
  }
  if (o.rebatch.balance_eps < 0 || o.rebatch.window < absl::ZeroDuration() ||
      o.default_max_queue < absl::ZeroDuration() || o.rebatch.max_window_requests <= 0 ||
      o.max_in_flight <= 0 || o.poll_interval <= absl::ZeroDuration() ||
      o.load_window <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "--balance_eps, --window_ms and --max_queue_ms must be ≥ 0; --max_window, "
        "--max_in_flight, --poll_ms and --load_window_s > 0");
  }
  // Threads are a bounded resource: 100,000 workers ended the router on thread creation.
  if (o.http_threads < 1 || o.http_threads > kMaxHttpThreads || o.http_workers < 1 ||
      o.http_workers > kMaxHttpThreads) {
    return absl::InvalidArgumentError(
        absl::StrCat("--http_threads and --http_workers must be between 1 and ", kMaxHttpThreads,
                     " (got ", o.http_threads, " and ", o.http_workers, ")"));
  }
  if (o.message_special_tokens != "text" && o.message_special_tokens != "control") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--message_special_tokens must be text or control (got '", o.message_special_tokens, "')"));
  }
  if (o.chat_template_render_timeout < absl::Milliseconds(1) ||
      o.chat_template_render_timeout > absl::Seconds(60)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--chat_template_render_ms must be between 1 and 60000 (got ",
                     absl::ToDoubleMilliseconds(o.chat_template_render_timeout), ")"));
  }
  if ((o.rebatch.policy == Policy::kTime) != !o.cluster.empty()) {
    return absl::InvalidArgumentError(
        o.cluster.empty()
            ? "--policy time needs --cluster (lab, h100, h200 or a profile file): the rule "
              "predicts each placement's step with the cluster's figures"
            : "--cluster is for --policy time (the rule that predicts with it)");
  }
  if (!o.rebatch.node_of.empty()) {  // --topology: every group must have its ranks.
    std::vector<size_t> sizes;
    if (o.experiment == 0) sizes.push_back(o.engines.size());
    for (const auto& [arm, engines] : o.arms) sizes.push_back(engines.size());
    for (size_t n : sizes) {
      if (n != o.rebatch.node_of.size()) {
        return absl::InvalidArgumentError(absl::StrCat("--topology has ", o.rebatch.node_of.size(),
                                                       " ranks; an engine group "
                                                       "behind this router has ",
                                                       n));
      }
    }
  }
  const bool from_planner = o.experiment == 0 && !o.planner.empty();
  const bool fixed = !o.affinity_file.empty();
  if (from_planner && (o.model_name.empty() == (o.version == 0))) {
    return absl::InvalidArgumentError(
        "--planner needs --model_name (follow the active version) or --version (one version), "
        "not both");
  }
  if (from_planner && fixed) {
    return absl::InvalidArgumentError("give --planner or --affinity, not both");
  }
  if (fixed != !o.placement_file.empty()) {
    return absl::InvalidArgumentError("--affinity and --placement go together");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::map<std::string, std::vector<std::string>>> ParseArms(absl::string_view arms) {
  std::map<std::string, std::vector<std::string>> engines;
  for (absl::string_view arm : absl::StrSplit(arms, ';', absl::SkipEmpty())) {
    std::vector<std::string> kv = absl::StrSplit(arm, absl::MaxSplits('=', 1));
    if (kv.size() != 2 || kv[0].empty() || kv[1].empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--arms: '", arm, "' is not NAME=HOST:PORT,..."));
    }
    engines[kv[0]] = absl::StrSplit(kv[1], ',', absl::SkipEmpty());
  }
  return engines;
}

// A group's ranks as the time rule sees them: the nodes of --topology (its node ids), else one
// node.
absl::StatusOr<planner::Topology> GroupTopology(const std::vector<int>& node_of, int ranks) {
  if (node_of.empty()) return planner::Topology::Flat(ranks);
  std::vector<std::vector<double>> cost(ranks, std::vector<double>(ranks));
  for (int a = 0; a < ranks; ++a) {
    for (int b = 0; b < ranks; ++b) {
      cost[a][b] = a == b                     ? 0
                   : node_of[a] == node_of[b] ? planner::Topology::kIntraNodeCost
                                              : planner::Topology::kCrossNodeCost;
    }
  }
  return planner::Topology::FromCostMatrix(std::move(cost), node_of);
}

absl::StatusOr<std::unique_ptr<RouterServer>> RouterServer::Start(const RouterServerOptions& o) {
  RETURN_IF_ERROR(ValidateRouterServerOptions(o));
  ASSIGN_OR_RETURN(engine::model::ModelConfig config, engine::model::LoadModelConfig(o.model_dir));
  std::unique_ptr<RouterServer> s(new RouterServer());
  s->options_ = o;
  ASSIGN_OR_RETURN(s->tokenizer_, engine::model::Tokenizer::FromDirectory(o.model_dir));
  const auto vocab = static_cast<uint32_t>(config.vocab_size);
  const int ranks = static_cast<int>(o.engines.size());

  if (o.experiment > 0) {
    ASSIGN_OR_RETURN(s->groups_, ExperimentGroups(o, vocab, s->arm_tables_));
  } else {
    s->groups_.push_back({.ranks = o.engines, .tables = &s->tables_, .rebatch = o.rebatch});
  }
  for (GroupOptions& g : s->groups_) {
    g.slo_ttft_ms = o.slo_ttft_ms;
    g.slo_tpot_ms = o.slo_tpot_ms;
    g.load_window = o.load_window;
  }
  if (o.rebatch.policy == Policy::kTime) {
    absl::StatusOr<planner::sim::ClusterProfile> profile =
        planner::sim::LoadClusterProfile(o.cluster);
    if (!profile.ok()) {
      return absl::Status(profile.status().code(),
                          absl::StrCat("--cluster: ", profile.status().message()));
    }
    const planner::sim::ModelShape shape = engine::model::ShapeFromConfig(config, o.model_dir);
    if (absl::Status shaped = planner::sim::CheckShape(shape); !shaped.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--policy time: ", o.model_dir,
                       "/config.json is not a shape the step-cost model "
                       "takes (",
                       shaped.message(), ")"));
    }
    for (GroupOptions& g : s->groups_) {
      ASSIGN_OR_RETURN(planner::Topology topology,
                       GroupTopology(g.rebatch.node_of, static_cast<int>(g.ranks.size())));
      g.rebatch.predictor = std::make_shared<planner::sim::StepPredictor>(
          shape, *profile, std::move(topology), planner::sim::PredictorOptions{.node_dedup = true});
    }
  }
  if (!o.affinity_file.empty()) {
    ASSIGN_OR_RETURN(std::string affinity,
                     ReadFlagFile("affinity", o.affinity_file, kMaxDataFileBytes));
    ASSIGN_OR_RETURN(std::string placement, ReadFlagFile("placement", o.placement_file));
    ASSIGN_OR_RETURN(auto built, BuildRouterTables(o.version, affinity, placement, ranks, vocab));
    s->tables_.Set(std::move(built));
  } else if (o.experiment == 0 && !o.planner.empty() && o.version > 0) {
    auto stub = planner::rpc::PlannerService::NewStub(semmoe::NewChannel(o.planner));
    if (absl::Status held = HoldFetched(FetchRouterTables(*stub, o.version, ranks, vocab),
                                        o.rebatch.policy, s->tables_);
        !held.ok()) {
      return absl::Status(held.code(), absl::StrCat("planner ", o.planner, ": ", held.message()));
    }
  } else if (o.experiment == 0 && !o.planner.empty()) {
    s->watch_ = std::make_unique<PlannerWatch>(o.planner, o.model_name, ranks, vocab, s->tables_);
  } else if (o.experiment == 0 && o.rebatch.policy == Policy::kSemantic) {
    s->tables_.Set(nullptr, kNoTables);
  }

  // A group placed with one version's tables from the planner follows the version its engines
  // serve: they may roll out another (engine serve --follow_active).
  if (!o.planner.empty() && (o.experiment > 0 || o.version > 0)) {
    for (GroupOptions& g : s->groups_) {
      s->follows_.push_back(std::make_unique<EngineFollow>(
          o.planner, static_cast<int>(g.ranks.size()), vocab, *g.tables));
      g.follow = s->follows_.back().get();
    }
  }
  s->core_ = std::make_unique<RouterCore>(
      RouterOptions{.groups = s->groups_,
                    .tokenizer = s->tokenizer_.get(),
                    .vocab_size = config.vocab_size,
                    .max_prompt_tokens = config.max_position_embeddings,  // As the engines check.
                    .max_in_flight = o.max_in_flight,
                    .default_max_queue = o.default_max_queue,
                    .poll_interval = o.poll_interval,
                    .requeue = o.requeue,
                    .max_predicted_wait = o.max_predicted_wait,
                    .experiment_id = o.experiment,
                    .planner = o.planner,
                    .report_interval = o.report_interval,
                    .cluster = o.cluster});
  s->service_ = std::make_unique<RouterServiceImpl>(*s->core_);
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(absl::StrCat(o.listen, ":", o.port), semmoe::ServerCredentials(),
                           &s->port_);
  builder.RegisterService(s->service_.get());
  s->server_ = builder.BuildAndStart();
  if (s->server_ == nullptr || s->port_ <= 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", o.listen, ":", o.port));
  }
  if (o.http_port >= 0) RETURN_IF_ERROR(s->StartHttp());
  return s;
}

absl::Status RouterServer::StartHttp() {
  const RouterServerOptions& o = options_;
  // A model without a usable chat template still serves completions; chat requests are told
  // why not (and Describe warns).
  const engine::model::ChatTemplateOptions chat_options{
      .render_timeout = o.chat_template_render_timeout,
      .cancel = o.stop != nullptr ? o.stop : &stopping_};
  absl::StatusOr<engine::model::ChatTemplate> chat =
      o.chat_template_file.empty()
          ? engine::model::ChatTemplate::Load(o.model_dir, chat_options)
          : ChatTemplateFromFile(o.model_dir, o.chat_template_file, chat_options);
  if (chat.ok()) {
    chat_template_ = std::make_unique<engine::model::ChatTemplate>(*std::move(chat));
  } else if (!o.chat_template_file.empty()) {
    return chat.status();  // Asked for by name: a bad file stops the start.
  } else if (!absl::IsNotFound(chat.status()) && !absl::IsInvalidArgument(chat.status())) {
    // The model's own template loops, grows or was cancelled while probed: say so and stop,
    // rather than start a door whose every chat request would hit the same wall.
    return absl::Status(chat.status().code(),
                        absl::StrCat("the model's chat template: ", chat.status().message()));
  } else {
    chat_error_ = std::string(chat.status().message());
  }
  ASSIGN_OR_RETURN(tool_call_format_, ToolCallFormatFor(o.model_dir, o.tool_call_parser));
  if (o.message_special_tokens == "text") {
    ASSIGN_OR_RETURN(engine::model::SpecialTextMask mask,
                     engine::model::SpecialTextMask::Create(tokenizer_->SpecialTokenTexts()));
    special_text_ = std::make_unique<engine::model::SpecialTextMask>(std::move(mask));
  }
  const std::string name =
      o.served_model_name.empty() ? BaseName(o.model_dir) : o.served_model_name;
  const SecurityMaterial& tls = Security();
  ASSIGN_OR_RETURN(http_,
                   http::HttpFrontend::Start({.listen = o.listen,
                                              .port = o.http_port,
                                              .served_model = name,
                                              .chat_template = chat_template_.get(),
                                              .chat_template_error = chat_error_,
                                              .message_special_text = special_text_.get(),
                                              .tool_call_format = tool_call_format_,
                                              .router = core_.get(),
                                              .default_chat_max_tokens = o.default_chat_max_tokens,
                                              .threads = o.http_threads,
                                              .workers = o.http_workers,
                                              .limits = o.http_limits,
                                              .tls_cert_file = tls.tls() ? tls.cert_file : "",
                                              .tls_key_file = tls.tls() ? tls.key_file : ""}));
  return absl::OkStatus();
}

std::string RouterServer::Describe() const {
  const RouterServerOptions& o = options_;
  std::string line = absl::StrCat("router serving on ", o.listen, ":", port_, ", policy ",
                                  PolicyName(o.rebatch.policy));
  if (o.experiment > 0) {
    absl::StrAppend(&line, ", experiment ", o.experiment, ":");
    for (const GroupOptions& g : groups_) {
      absl::StrAppend(&line, " arm ", g.name, " (", g.share_percent, "%, ", g.ranks.size(),
                      " ranks)");
    }
  } else {
    absl::StrAppend(&line, " over ", o.engines.size(), " ranks",
                    watch_ != nullptr          ? ", following the planner's active version"
                    : !o.affinity_file.empty() ? ", fixed tables"
                    : !o.planner.empty()
                        ? absl::StrCat(", version ", o.version,
                                       "'s tables from the planner, then the engines' version")
                        : ", no tables (load only)");
  }
  if (http_ != nullptr) {
    absl::StrAppend(&line, "\nrouter: OpenAI-compatible HTTP on http://", o.listen, ":",
                    http_->port(), "/v1 (",
                    chat_template_ != nullptr ? "completions and chat" : "completions only", ")");
    if (chat_template_ == nullptr) {
      absl::StrAppend(&line, "\nrouter: WARNING: no chat completions: ", chat_error_);
    } else {
      absl::StrAppend(&line,
                      "\nrouter: tool calls: ", ToolsLine(*chat_template_, tool_call_format_));
      absl::StrAppend(&line, "\nrouter: special-token text in messages: ",
                      special_text_ != nullptr
                          ? "text (--message_special_tokens=text)"
                          : "control tokens (--message_special_tokens=control)");
    }
  }
  for (const GroupOptions& g : groups_) {
    const std::string error = g.tables->error();
    if (!error.empty()) {
      absl::StrAppend(&line, "\nrouter: WARNING: ", g.name.empty() ? "" : "arm " + g.name + ": ",
                      error);
    }
  }
  return line;
}

void RouterServer::Shutdown() {
  stopping_.store(true);  // Renders in flight stop at their next check (jinja::RenderLimits).
  if (http_ != nullptr) http_->Shutdown();
  if (server_ != nullptr) {
    // Calls still running get 2 s, then are cancelled: a Ctrl-C stops a loaded cluster quickly.
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  }
}

RouterServer::~RouterServer() { Shutdown(); }

}  // namespace semmoe::router
