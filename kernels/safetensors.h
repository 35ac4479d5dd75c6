// Safetensors checkpoints, memory-mapped.
//
// File layout (https://github.com/huggingface/safetensors): u64 little-endian header length N |
// N bytes of JSON header | data. The header maps tensor names to
// {"dtype", "shape", "data_offsets": [begin, end)} with offsets relative to the data section,
// plus an optional "__metadata__" object of strings.
//
// Open() validates everything before any tensor is read: a truncated file, a header length past
// the end, invalid JSON, an unsupported dtype, offsets that do not match shape × dtype size, run
// past the end or overlap another tensor are each an InvalidArgument naming the file and the
// tensor. Nothing in a corrupted file can make a later View() read outside the mapping.
//
// Thread-safety: immutable after Open(); concurrent reads are safe.
#ifndef SEMMOE_KERNELS_SAFETENSORS_H_
#define SEMMOE_KERNELS_SAFETENSORS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kernels/dtype.h"
#include "kernels/tensor.h"

namespace semmoe::kernels {

struct TensorInfo {
  std::string name;
  kernels::DType dtype = kernels::DType::kF32;
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // Byte offsets into the data section, [begin, end).
  uint64_t end = 0;
};

class SafetensorsFile {
 public:
  // Maps `path` read-only (copy-on-write, so a stray write cannot reach the file).
  static absl::StatusOr<std::unique_ptr<SafetensorsFile>> Open(const std::string& path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  // In header order sorted by name.
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // Null if absent.
  const TensorInfo* Find(absl::string_view name) const;
  // A view of the tensor's bytes in its stored dtype; valid while this object lives.
  kernels::Tensor View(const TensorInfo& info) const;
  // Drops the tensor's mapped pages from memory (whole pages inside its bytes): a loader that
  // has copied a tensor gives them back, so a checkpoint's load does not hold the file and the
  // copies at once. A later View reads them from the file again.
  void Release(const TensorInfo& info) const;

 private:
  SafetensorsFile(std::string path, void* map, size_t size)
      : path_(std::move(path)), map_(map), size_(size) {}
  absl::Status ParseHeader();

  std::string path_;
  void* map_;
  size_t size_;
  size_t data_start_ = 0;
  std::vector<TensorInfo> tensors_;
  absl::flat_hash_map<std::string, size_t> index_;
  std::map<std::string, std::string> metadata_;
};

// A checkpoint directory: `model.safetensors`, or the shards listed by
// `model.safetensors.index.json` ({"weight_map": {tensor: shard file}}). Shard names must be
// plain file names inside the directory.
class Checkpoint {
 public:
  static absl::StatusOr<std::unique_ptr<Checkpoint>> Open(const std::string& dir);

  const std::string& dir() const { return dir_; }
  std::vector<std::string> TensorNames() const;
  // NotFound naming the tensor and the directory if absent.
  absl::StatusOr<const TensorInfo*> Info(absl::string_view name) const;
  // A view of the mapped bytes in the stored dtype (valid while this object lives).
  absl::StatusOr<kernels::Tensor> View(absl::string_view name) const;
  // A new owning F32 copy, converted from BF16/F16/F32.
  absl::StatusOr<kernels::Tensor> ReadF32(absl::string_view name) const;
  // SafetensorsFile::Release of the named tensor (nothing if absent).
  void Release(absl::string_view name) const;

 private:
  struct Entry {
    const SafetensorsFile* file;
    const TensorInfo* info;
  };
  std::string dir_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  absl::flat_hash_map<std::string, Entry> entries_;
};

// Builds a safetensors file in memory, in the layout Hugging Face writes: tensors sorted by
// name, packed back to back, header padded with spaces to a multiple of 8 bytes.
class SafetensorsWriter {
 public:
  // `bytes` must hold exactly numel × dtype size; InvalidArgument otherwise or on a duplicate.
  absl::Status Add(std::string name, kernels::DType dtype, std::vector<int64_t> shape,
                   std::string bytes);
  // Converts `f32_values` to `dtype` (F32, BF16, F16) and adds them.
  absl::Status AddF32(std::string name, kernels::DType dtype, std::vector<int64_t> shape,
                      const std::vector<float>& f32_values);
  void SetMetadata(std::string key, std::string value) { metadata_[key] = std::move(value); }
  std::string Serialize() const;
  std::vector<std::string> names() const;

 private:
  struct Pending {
    kernels::DType dtype;
    std::vector<int64_t> shape;
    std::string bytes;
  };
  std::map<std::string, Pending> tensors_;
  std::map<std::string, std::string> metadata_{{"format", "pt"}};
};

}  // namespace semmoe::kernels

#endif  // SEMMOE_KERNELS_SAFETENSORS_H_
