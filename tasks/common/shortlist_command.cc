#include "tasks/common/shortlist_command.h"

#include "absl/strings/str_cat.h"
#include "core/config/config_loader.h"
#include "core/status_macros.h"
#include "runtime/decode/shortlist_file.h"
#include "runtime/train/shortlist_learning.h"
#include "tasks/common/trained_model.h"

namespace tfm {

absl::Status RunShortlistCommand(const std::string& model_path, const std::string& output,
                                 const std::string& data_dir, std::ostream& log) {
  if (model_path.empty() || output.empty()) {
    return absl::InvalidArgumentError(
        "shortlist needs --model=DIR (the trained model) and --output=FILE (where to write it)");
  }
  TFM_ASSIGN_OR_RETURN(const TrainedModel trained,
                       LoadTrainedModel(model_path, Device::Cpu(), &log));
  LoadedConfig saved;
  saved.config = trained.config;
  RelocateCorpora(data_dir, &saved);
  if (saved.config.data().train().empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "shortlist: the config saved with ", trained.checkpoint_dir, " has no data.train"));
  }
  TFM_ASSIGN_OR_RETURN(
      ShortlistTable table,
      LearnShortlist(saved.config.data(), trained.tokenizer, ShortlistLearningOptions(), log));
  table.comments.push_back(absl::StrCat("for the model ", trained.checkpoint_dir));
  TFM_RETURN_IF_ERROR(WriteShortlistFile(output, table));
  int64_t listed = 0;
  for (const std::vector<int32_t>& best : table.best) listed += best.empty() ? 0 : 1;
  log << "shortlist: wrote " << output << " (" << table.frequent.size()
      << " frequent targets; up to " << ShortlistLearningOptions().stored_best
      << " targets for each of " << listed << " source tokens); decode with --shortlist="
      << output << "\n";
  return absl::OkStatus();
}

}  // namespace tfm
