#include "planner/proto/table_chunks.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace semmoe::planner {
namespace {

// Collects what the server side writes.
class Collect : public grpc::ServerWriterInterface<rpc::TableChunk> {
 public:
  void SendInitialMetadata() override {}
  bool Write(const rpc::TableChunk& msg, grpc::WriteOptions) override {
    chunks.push_back(msg);
    return open;
  }
  std::vector<rpc::TableChunk> chunks;
  bool open = true;
};

absl::StatusOr<std::string> Assemble(const std::vector<rpc::TableChunk>& chunks, size_t max) {
  TableAssembler a(max);
  for (const rpc::TableChunk& c : chunks) {
    if (absl::Status s = a.Add(c); !s.ok()) return s;
  }
  return std::move(a).Finish();
}

TEST(TableChunksTest, TablesOfAnySizeComeBackWhole) {
  for (size_t size : {0, 1, 999, 1000, 1001, 5432}) {
    std::string table(size, '\0');
    for (size_t i = 0; i < size; ++i) table[i] = static_cast<char>(i * 31 + 7);
    Collect out;
    ASSERT_TRUE(WriteTableChunks(out, 3, table, 1000));
    EXPECT_EQ(out.chunks.size(), size == 0 ? 1 : (size + 999) / 1000) << size;
    for (const rpc::TableChunk& c : out.chunks) EXPECT_LE(c.data().size(), 1000u);
    auto back = Assemble(out.chunks, 1 << 20);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, table);
  }
}

TEST(TableChunksTest, AWriterStopsWhenTheClientIsGone) {
  Collect out;
  out.open = false;
  EXPECT_FALSE(WriteTableChunks(out, 1, std::string(5000, 'x'), 1000));
  EXPECT_EQ(out.chunks.size(), 1u);
}

TEST(TableChunksTest, ChunksThatDoNotAddUpAreDataLoss) {
  Collect out;
  ASSERT_TRUE(WriteTableChunks(out, 4, std::string(3000, 'x'), 1000));
  auto expect_loss = [](const absl::StatusOr<std::string>& got, const std::string& what) {
    ASSERT_FALSE(got.ok()) << what;
    EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss) << what << ": " << got.status();
  };
  std::vector<rpc::TableChunk> c = out.chunks;
  c.pop_back();
  expect_loss(Assemble(c, 1 << 20), "a missing last chunk");
  c = out.chunks;
  std::swap(c[0], c[1]);
  expect_loss(Assemble(c, 1 << 20), "out of order");
  c = out.chunks;
  c[1].set_version(5);
  expect_loss(Assemble(c, 1 << 20), "another version");
  c = out.chunks;
  c[2].set_total_bytes(9000);
  expect_loss(Assemble(c, 1 << 20), "a changed total");
  c = out.chunks;
  c[2].mutable_data()->append("y");
  expect_loss(Assemble(c, 1 << 20), "past the total");
  c = out.chunks;
  c.push_back(c[2]);
  expect_loss(Assemble(c, 1 << 20), "a repeated chunk");
  expect_loss(Assemble(out.chunks, 2999), "over the limit");
  expect_loss(Assemble({}, 1 << 20), "no chunk at all");
  c = out.chunks;
  c[0].set_total_bytes(-1);
  expect_loss(Assemble(c, 1 << 20), "a negative total");
}

}  // namespace
}  // namespace semmoe::planner
