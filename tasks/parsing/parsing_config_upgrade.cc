// Configs and checkpoints written before the parsing task had its own
// ParsingConfig (parsing_config.proto) set its settings in deprecated fields
// of the engine's schema: model.decoder_leaf_alignment(_last_piece) and
// decode.tag_dictionary_min_count / tag_dictionary_open_class. They are
// moved into model.decoder_input_hook and the ParsingConfig whenever a
// config is read (core/config/config_upgrades.h), so those models keep
// loading and decoding as they did.
#include "core/config/config_upgrades.h"
#include "tasks/parsing/leaf_alignment_hook.h"
#include "tasks/parsing/parsing_config.h"

namespace tfm {
namespace {

// This function exists to read the deprecated fields, the one place that
// should: their accessors' deprecation warnings are expected here alone.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
void UpgradeParsingFields(config::TaskConfig* config) {
  const config::ModelConfig& old_model = config->model();
  const config::DecodeConfig& old_decode = config->decode();
  if (!old_model.has_decoder_leaf_alignment() &&
      !old_model.has_decoder_leaf_alignment_last_piece() &&
      !old_decode.has_tag_dictionary_min_count() && !old_decode.has_tag_dictionary_open_class()) {
    return;  // Nothing to move: the config stays as it is, byte for byte.
  }
  config::ModelConfig& model = *config->mutable_model();
  config::DecodeConfig& decode = *config->mutable_decode();
  parsing::ParsingConfig settings = ParsingSettings(*config);
  if (model.decoder_leaf_alignment()) model.set_decoder_input_hook(kLeafAlignmentHook);
  if (model.has_decoder_leaf_alignment_last_piece()) {
    settings.set_leaf_alignment_last_piece(model.decoder_leaf_alignment_last_piece());
  }
  if (decode.has_tag_dictionary_min_count()) {
    settings.set_tag_dictionary_min_count(decode.tag_dictionary_min_count());
  }
  if (decode.has_tag_dictionary_open_class()) {
    settings.set_tag_dictionary_open_class(decode.tag_dictionary_open_class());
  }
  model.clear_decoder_leaf_alignment();
  model.clear_decoder_leaf_alignment_last_piece();
  decode.clear_tag_dictionary_min_count();
  decode.clear_tag_dictionary_open_class();
  SetParsingSettings(settings, config);
}
#pragma GCC diagnostic pop

TFM_REGISTER_CONFIG_UPGRADE("parsing", UpgradeParsingFields);

}  // namespace
}  // namespace tfm
