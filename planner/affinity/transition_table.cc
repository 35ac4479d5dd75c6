#include "planner/affinity/transition_table.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "planner/affinity/byte_io.h"

namespace semmoe::planner {
namespace {

constexpr char kMagic[] = "SMLAYRA1";

}  // namespace

std::string TransitionTable::Serialize() const {
  std::string out(kMagic, 8);
  PutBytes<uint32_t>(out, static_cast<uint32_t>(layers.size()));
  PutBytes<uint32_t>(out, static_cast<uint32_t>(num_devices));
  const size_t per_layer = static_cast<size_t>(num_devices + 1) * num_devices;
  for (size_t l = 1; l < layers.size(); ++l) {
    for (size_t h = 0; h < per_layer; ++h) {
      const Entry e = h < layers[l].size() ? layers[l][h] : Entry{};
      PutBytes<int16_t>(out, e.device);
      PutBytes<float>(out, e.confidence);
    }
  }
  return out;
}

absl::StatusOr<TransitionTable> TransitionTable::Deserialize(absl::string_view bytes) {
  if (bytes.size() < 16 || bytes.substr(0, 8) != absl::string_view(kMagic, 8)) {
    return absl::InvalidArgumentError("layer tables: not an SMLAYRA1 file");
  }
  ByteReader r(bytes.substr(8), "layer tables");
  uint32_t layers = 0, g = 0;
  RETURN_IF_ERROR(r.Get(layers, "the layer count"));
  RETURN_IF_ERROR(r.Get(g, "the device count"));
  if (layers > 4096 || g == 0 || g > 1024) {
    return absl::InvalidArgumentError(
        absl::StrCat("layer tables: implausible shape (", layers, " layers, ", g, " devices)"));
  }
  const size_t per_layer = static_cast<size_t>(g + 1) * g;
  const size_t expected = 16 + (layers == 0 ? 0 : (layers - 1) * per_layer * 6);
  if (bytes.size() != expected) {
    return absl::InvalidArgumentError(
        absl::StrCat("layer tables: ", bytes.size(), " bytes, expected ", expected));
  }
  TransitionTable table;
  table.num_devices = static_cast<int>(g);
  table.layers.resize(layers);
  for (size_t l = 1; l < layers; ++l) {
    table.layers[l].resize(per_layer);
    for (Entry& e : table.layers[l]) {
      const size_t at = 8 + r.at();
      RETURN_IF_ERROR(r.Get(e.device, "a device"));
      RETURN_IF_ERROR(r.Get(e.confidence, "a confidence"));
      if (e.device < -1 || e.device >= static_cast<int>(g) || !(e.confidence >= 0.0f) ||
          e.confidence > 1.0f) {
        return absl::InvalidArgumentError(absl::StrCat("layer tables: bad entry (device ", e.device,
                                                       ", confidence ", e.confidence, ") at byte ",
                                                       at));
      }
    }
  }
  return table;
}

}  // namespace semmoe::planner
