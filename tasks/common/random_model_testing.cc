#include "tasks/common/random_model_testing.h"

#include <memory>

#include "core/status_macros.h"
#include "layers/transformer.h"
#include "runtime/train/checkpoint.h"
#include "runtime/train/checkpoint_match.h"

namespace tfm {
namespace testing {

absl::StatusOr<std::string> WriteRandomModelCheckpoint(const config::TaskConfig& config,
                                                       const Tokenizer& tokenizer,
                                                       const std::string& work_dir,
                                                       uint64_t init_seed) {
  const VocabularySpec vocabulary{tokenizer.vocab_size(), tokenizer.pad_id(), tokenizer.bos_id(),
                                  tokenizer.eos_id()};
  TFM_ASSIGN_OR_RETURN(std::unique_ptr<Transformer> transformer,
                       Transformer::Create(config.model(), vocabulary, Device::Cpu(), init_seed));
  Checkpoint checkpoint;
  checkpoint.model = ParameterTensors(*transformer);
  checkpoint.state.set_update(1);
  checkpoint.config = config;
  checkpoint.vocabulary = tokenizer.model();
  return WriteCheckpoint(work_dir, checkpoint);
}

}  // namespace testing
}  // namespace tfm
