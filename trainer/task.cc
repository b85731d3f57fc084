#include "trainer/task.h"

#include <cstdio>
#include <utility>

#include "base/strings.h"

namespace fanout::trainer {
namespace {

struct Registered {
  const char* name;
  const char* help;
  std::unique_ptr<Task> (*make)();
};

// The tasks fanout-train offers (--task NAME), the first the default.
const Registered kTasks[] = {
    {"node", "node classification: labels of the nodes the train/val/test masks mark", MakeNodeClassificationTask},
    {"link", "link prediction: the stored edges against drawn negatives, on a graph partitioned with --edge-split",
     MakeLinkPredictionTask},
};

}  // namespace

std::vector<std::string> TaskNames() {
  std::vector<std::string> names;
  for (const Registered& t : kTasks) names.emplace_back(t.name);
  return names;
}

std::string TaskHelp() {
  std::string text;
  for (const Registered& t : kTasks) text += base::StrCat(text.empty() ? "" : "; ", t.name, " = ", t.help);
  return text;
}

std::string Fixed4(double x) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.4f", x);
  return text;
}

absl::Status CheckBatchOrder(const char* loader, int64_t got_epoch, int64_t got_step, int64_t epoch, int64_t step) {
  if (got_epoch == epoch && got_step == step) return absl::OkStatus();
  return absl::InternalError(
      base::StrCat(loader, " gave epoch ", got_epoch, " step ", got_step, ", expected ", epoch, " step ", step));
}

sampler::LoaderOptions TrainingLoaderOptions(const TrainOptions& o, int64_t first_epoch, int64_t first_step) {
  sampler::LoaderOptions lo = o.loader;
  lo.first_epoch = first_epoch;
  lo.num_epochs = o.epochs - first_epoch;
  lo.first_step = first_step;
  lo.samplers_ignore_sigterm = o.stop_requested != nullptr;
  lo.part_config_path = o.part_config;
  return lo;
}

absl::StatusOr<std::unique_ptr<Task>> MakeTask(std::string_view name) {
  for (const Registered& t : kTasks) {
    if (name == t.name) return t.make();
  }
  return absl::NotFoundError(
      base::StrCat("no training task '", name, "' (the tasks are: ", base::StrJoin(TaskNames(), ", "), ")"));
}

}  // namespace fanout::trainer
