#include "kernels/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/file.h"
#include "common/json_fields.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"

namespace semmoe::kernels {
namespace {

using kernels::DType;
using kernels::Tensor;

// Real headers are a few MB at most (one entry per tensor); refuse absurd lengths early.
constexpr uint64_t kMaxHeaderBytes = 256ull << 20;
constexpr int kMaxRank = 8;

absl::Status Corrupt(const std::string& path, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", what));
}

absl::StatusOr<TensorInfo> ParseEntry(const std::string& path, const std::string& name,
                                      const nlohmann::json& entry, uint64_t data_size) {
  std::string where = absl::StrCat("tensor '", name, "'");
  if (!entry.is_object()) return Corrupt(path, absl::StrCat(where, ": expected an object"));
  TensorInfo info;
  info.name = name;
  auto dtype = entry.find("dtype");
  if (dtype == entry.end() || !dtype->is_string()) {
    return Corrupt(path, absl::StrCat(where, ": missing string 'dtype'"));
  }
  auto parsed = kernels::ParseDType(dtype->get<std::string>());
  if (!parsed.ok()) return Corrupt(path, absl::StrCat(where, ": ", parsed.status().message()));
  info.dtype = *parsed;
  auto shape = entry.find("shape");
  if (shape == entry.end() || !shape->is_array() || shape->size() > kMaxRank) {
    return Corrupt(
        path, absl::StrCat(where, ": 'shape' must be a list of at most ", kMaxRank, " dimensions"));
  }
  // numel × size must fit: every dimension is checked against the data size as we go.
  uint64_t bytes = kernels::DTypeSize(info.dtype);
  for (const auto& d : *shape) {
    if (!d.is_number_unsigned()) {
      return Corrupt(path, absl::StrCat(where, ": shape entries must be non-negative integers"));
    }
    uint64_t dim = d.get<uint64_t>();
    if (dim > (1ull << 40) || (dim != 0 && bytes > (1ull << 50) / dim)) {
      return Corrupt(path, absl::StrCat(where, ": shape is too large"));
    }
    info.shape.push_back(static_cast<int64_t>(dim));
    bytes *= dim;
  }
  auto offsets = entry.find("data_offsets");
  if (offsets == entry.end() || !offsets->is_array() || offsets->size() != 2 ||
      !(*offsets)[0].is_number_unsigned() || !(*offsets)[1].is_number_unsigned()) {
    return Corrupt(path, absl::StrCat(where, ": 'data_offsets' must be [begin, end]"));
  }
  info.begin = (*offsets)[0].get<uint64_t>();
  info.end = (*offsets)[1].get<uint64_t>();
  if (info.begin > info.end || info.end > data_size) {
    return Corrupt(path,
                   absl::StrCat(where, ": data_offsets [", info.begin, ", ", info.end,
                                ") are out of range of the ", data_size, "-byte data section"));
  }
  if (info.end - info.begin != bytes) {
    return Corrupt(path, absl::StrCat(where, ": data_offsets span ", info.end - info.begin,
                                      " bytes but ", kernels::DTypeName(info.dtype), " shape [",
                                      absl::StrJoin(info.shape, ", "), "] needs ", bytes));
  }
  return info;
}

}  // namespace

absl::StatusOr<std::unique_ptr<SafetensorsFile>> SafetensorsFile::Open(const std::string& path) {
  ASSIGN_OR_RETURN(const int fd, OpenInputFile(path));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int err = errno;
    close(fd);
    return absl::InternalError(absl::StrCat("cannot stat ", path, ": ", std::strerror(err)));
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return Corrupt(path, "a pipe, not a regular file (safetensors are mapped, not streamed)");
  }
  size_t size = static_cast<size_t>(st.st_size);
  if (size < 8) {
    close(fd);
    return Corrupt(
        path, absl::StrCat("truncated: ", size, " bytes, need at least 8 for the header length"));
  }
  void* map = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  int err = errno;
  close(fd);
  if (map == MAP_FAILED) {
    return absl::InternalError(absl::StrCat("cannot mmap ", path, ": ", std::strerror(err)));
  }
  std::unique_ptr<SafetensorsFile> file(new SafetensorsFile(path, map, size));
  RETURN_IF_ERROR(file->ParseHeader());
  return file;
}

SafetensorsFile::~SafetensorsFile() { munmap(map_, size_); }

absl::Status SafetensorsFile::ParseHeader() {
  const unsigned char* bytes = static_cast<const unsigned char*>(map_);
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | bytes[i];
  if (header_len > size_ - 8) {
    return Corrupt(path_, absl::StrCat("header length ", header_len,
                                       " runs past the end of the file (", size_, " bytes)"));
  }
  if (header_len > kMaxHeaderBytes) {
    return Corrupt(path_, absl::StrCat("header length ", header_len, " is implausibly large"));
  }
  data_start_ = 8 + header_len;
  uint64_t data_size = size_ - data_start_;
  absl::string_view text(reinterpret_cast<const char*>(bytes + 8), header_len);
  auto header = ParseJson(text, "header");
  if (!header.ok()) return Corrupt(path_, header.status().message());
  if (!header->is_object()) return Corrupt(path_, "header: expected a JSON object");
  for (auto it = header->begin(); it != header->end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it->is_object()) return Corrupt(path_, "__metadata__: expected an object");
      for (auto m = it->begin(); m != it->end(); ++m) {
        if (m->is_string()) metadata_[m.key()] = m->get<std::string>();
      }
      continue;
    }
    ASSIGN_OR_RETURN(TensorInfo info, ParseEntry(path_, it.key(), *it, data_size));
    tensors_.push_back(std::move(info));
  }
  // Overlap check on the byte ranges, in offset order (empty tensors overlap nothing).
  std::vector<const TensorInfo*> by_offset;
  for (const TensorInfo& t : tensors_) {
    if (t.end > t.begin) by_offset.push_back(&t);
  }
  std::sort(by_offset.begin(), by_offset.end(),
            [](const TensorInfo* a, const TensorInfo* b) { return a->begin < b->begin; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    if (by_offset[i]->begin < by_offset[i - 1]->end) {
      return Corrupt(path_, absl::StrCat("tensors '", by_offset[i - 1]->name, "' and '",
                                         by_offset[i]->name, "' overlap"));
    }
  }
  std::sort(tensors_.begin(), tensors_.end(),
            [](const TensorInfo& a, const TensorInfo& b) { return a.name < b.name; });
  for (size_t i = 0; i < tensors_.size(); ++i) index_[tensors_[i].name] = i;
  return absl::OkStatus();
}

const TensorInfo* SafetensorsFile::Find(absl::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

Tensor SafetensorsFile::View(const TensorInfo& info) const {
  char* data = static_cast<char*>(map_) + data_start_ + info.begin;
  auto view = Tensor::Wrap(info.dtype, info.shape, data, info.end - info.begin);
  // Holds: ParseHeader checked that the range lies in the mapping and matches the shape.
  CHECK(view.ok()) << view.status();
  return *view;
}

void SafetensorsFile::Release(const TensorInfo& info) const {
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t base = reinterpret_cast<uintptr_t>(map_) + data_start_;
  const uintptr_t begin = (base + info.begin + page - 1) / page * page;
  const uintptr_t end = (base + info.end) / page * page;
  // Advice only: a failure leaves the pages mapped, which costs memory, not correctness.
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

absl::StatusOr<std::unique_ptr<Checkpoint>> Checkpoint::Open(const std::string& dir) {
  auto checkpoint = std::make_unique<Checkpoint>();
  checkpoint->dir_ = dir;
  std::string index_path = JoinPath(dir, "model.safetensors.index.json");
  auto index_text = ReadFile(index_path);
  std::vector<std::pair<std::string, std::string>> weight_map;  // tensor → shard
  std::vector<std::string> shards;
  if (index_text.ok()) {
    ASSIGN_OR_RETURN(nlohmann::json index, ParseJson(*index_text, index_path));
    if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object()) {
      return absl::InvalidArgumentError(
          absl::StrCat(index_path, ": expected an object with a 'weight_map' object"));
    }
    for (auto it = index["weight_map"].begin(); it != index["weight_map"].end(); ++it) {
      if (!it->is_string()) {
        return absl::InvalidArgumentError(
            absl::StrCat(index_path, ": weight_map['", it.key(), "'] is not a file name"));
      }
      std::string shard = it->get<std::string>();
      if (shard.empty() || shard.find('/') != std::string::npos || shard == "." || shard == "..") {
        return absl::InvalidArgumentError(absl::StrCat(index_path, ": shard '", shard, "' for '",
                                                       it.key(), "' is not a plain file name"));
      }
      weight_map.emplace_back(it.key(), shard);
      if (std::find(shards.begin(), shards.end(), shard) == shards.end()) shards.push_back(shard);
    }
  } else if (absl::IsNotFound(index_text.status())) {
    shards.push_back("model.safetensors");
  } else {
    return index_text.status();
  }
  absl::flat_hash_map<std::string, const SafetensorsFile*> by_shard;
  for (const std::string& shard : shards) {
    ASSIGN_OR_RETURN(auto file, SafetensorsFile::Open(JoinPath(dir, shard)));
    by_shard[shard] = file.get();
    checkpoint->files_.push_back(std::move(file));
  }
  if (weight_map.empty()) {
    for (const auto& file : checkpoint->files_) {
      for (const TensorInfo& info : file->tensors()) {
        checkpoint->entries_[info.name] = Entry{file.get(), &info};
      }
    }
  } else {
    for (const auto& [name, shard] : weight_map) {
      const SafetensorsFile* file = by_shard[shard];
      const TensorInfo* info = file->Find(name);
      if (info == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat(
            index_path, ": tensor '", name, "' is mapped to ", shard, " which does not hold it"));
      }
      checkpoint->entries_[name] = Entry{file, info};
    }
  }
  return checkpoint;
}

std::vector<std::string> Checkpoint::TensorNames() const {
  std::vector<std::string> names;
  for (const auto& [name, entry] : entries_) names.push_back(name);
  std::sort(names.begin(), names.end());
  return names;
}

absl::StatusOr<const TensorInfo*> Checkpoint::Info(absl::string_view name) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) {
    return absl::NotFoundError(absl::StrCat(dir_, ": checkpoint has no tensor '", name, "'"));
  }
  return it->second.info;
}

absl::StatusOr<Tensor> Checkpoint::View(absl::string_view name) const {
  ASSIGN_OR_RETURN(const TensorInfo* info, Info(name));
  return entries_.find(name)->second.file->View(*info);
}

void Checkpoint::Release(absl::string_view name) const {
  auto it = entries_.find(name);
  if (it != entries_.end()) it->second.file->Release(*it->second.info);
}

absl::StatusOr<Tensor> Checkpoint::ReadF32(absl::string_view name) const {
  ASSIGN_OR_RETURN(Tensor view, View(name));
  if (view.dtype() == DType::kI32) {
    return absl::InvalidArgumentError(
        absl::StrCat(dir_, ": tensor '", name, "' is I32, expected a floating-point dtype"));
  }
  return kernels::ConvertTo(view, DType::kF32);
}

absl::Status SafetensorsWriter::Add(std::string name, DType dtype, std::vector<int64_t> shape,
                                    std::string bytes) {
  if (name == "__metadata__" || tensors_.count(name)) {
    return absl::InvalidArgumentError(
        absl::StrCat("duplicate or reserved tensor name '", name, "'"));
  }
  uint64_t expected = kernels::DTypeSize(dtype);
  for (int64_t d : shape) {
    if (d < 0) return absl::InvalidArgumentError(absl::StrCat(name, ": negative dimension"));
    expected *= static_cast<uint64_t>(d);
  }
  if (bytes.size() != expected) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": ", bytes.size(), " bytes, expected ", expected));
  }
  tensors_[name] = Pending{dtype, std::move(shape), std::move(bytes)};
  return absl::OkStatus();
}

absl::Status SafetensorsWriter::AddF32(std::string name, DType dtype, std::vector<int64_t> shape,
                                       const std::vector<float>& f32_values) {
  std::vector<float> copy = f32_values;
  ASSIGN_OR_RETURN(Tensor src, Tensor::Wrap(DType::kF32, {static_cast<int64_t>(copy.size())},
                                            copy.data(), copy.size() * sizeof(float)));
  ASSIGN_OR_RETURN(Tensor converted, kernels::ConvertTo(src, dtype));
  std::string bytes(static_cast<const char*>(converted.raw_data()), converted.nbytes());
  return Add(std::move(name), dtype, std::move(shape), std::move(bytes));
}

std::vector<std::string> SafetensorsWriter::names() const {
  std::vector<std::string> out;
  for (const auto& [name, t] : tensors_) out.push_back(name);
  return out;
}

std::string SafetensorsWriter::Serialize() const {
  nlohmann::ordered_json header;
  header["__metadata__"] = metadata_;
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors_) {
    header[name] = {{"dtype", std::string(kernels::DTypeName(t.dtype))},
                    {"shape", t.shape},
                    {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  uint64_t len = text.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((len >> (8 * i)) & 0xff);
  out += text;
  for (const auto& [name, t] : tensors_) out += t.bytes;
  return out;
}

}  // namespace semmoe::kernels
