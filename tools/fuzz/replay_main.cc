// The replay driver of a semmoe_fuzzer (tools/build_defs/fuzz.bzl) outside --config=fuzz: feeds
// every file named on the command line (directories: every file in them) to
// LLVMFuzzerTestOneInput, then `SEMMOE_FUZZ_MUTATIONS` (default 300) seeded mutations of each —
// bytes flipped, inserted, deleted, a chunk repeated, two inputs spliced — so CI exercises each
// fuzzer's corpus and its neighbourhood with the everyday compiler. A crash ends the test.
#include <dirent.h>
#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

void Collect(const std::string& path, std::vector<std::string>& out) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return;
  if (!S_ISDIR(st.st_mode)) {
    out.push_back(path);
    return;
  }
  DIR* dir = opendir(path.c_str());
  if (dir == nullptr) return;
  while (dirent* e = readdir(dir)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") Collect(path + "/" + name, out);
  }
  closedir(dir);
}

std::string Read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void Run(const std::string& input) {
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
}

std::string Mutate(std::string s, const std::string& other, std::mt19937_64& rng) {
  const int edits = 1 + rng() % 4;
  for (int i = 0; i < edits; ++i) {
    const size_t at = s.empty() ? 0 : rng() % s.size();
    switch (rng() % 6) {
      case 0:
        if (!s.empty()) s[at] = static_cast<char>(s[at] ^ (1u << (rng() % 8)));
        break;
      case 1:
        s.insert(at, 1, static_cast<char>(rng()));
        break;
      case 2:
        s.erase(at, 1 + rng() % 16);
        break;
      case 3:
        if (!s.empty()) s.insert(at, s.substr(at, 1 + rng() % 64));
        break;
      case 4:
        s.insert(at, std::string(1 + rng() % 8, "{[\"0:,\\"[rng() % 7]));
        break;
      default:
        if (!other.empty()) s = s.substr(0, at) + other.substr(rng() % other.size());
    }
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) Collect(argv[i], files);
  if (files.empty()) {
    std::fprintf(stderr, "replay: no inputs\n");
    return 2;
  }
  const char* env = std::getenv("SEMMOE_FUZZ_MUTATIONS");
  const int mutations = env != nullptr ? std::atoi(env) : 300;
  std::vector<std::string> inputs;
  for (const std::string& f : files) inputs.push_back(Read(f));
  Run("");
  for (const std::string& in : inputs) Run(in);
  std::mt19937_64 rng(12345);
  size_t runs = 1 + inputs.size();
  for (const std::string& in : inputs) {
    for (int m = 0; m < mutations; ++m) {
      Run(Mutate(in, inputs[rng() % inputs.size()], rng));
      ++runs;
    }
  }
  std::printf("replay: %zu inputs, %zu runs, no crash\n", inputs.size(), runs);
  return 0;
}
