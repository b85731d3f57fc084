// Shared rows (core/shared_rows.h): a mapping sees the creator's bytes and writes them back; the
// mapping is refused, saying why, for anything but the announced file with its token and size.
#include "core/shared_rows.h"

#include <unistd.h>

#include <cstring>

#include "gtest/gtest.h"

namespace fanout::core {
namespace {

TEST(SharedRowsTest, AMappingSharesTheCreatorsBytes) {
  auto made = SharedRows::Create("test", 3 * 4096 + 8);
  ASSERT_TRUE(made.ok()) << made.status();
  const SharedRowsInfo info = (*made)->info();
  EXPECT_EQ(info.pid, ::getpid());
  EXPECT_EQ(info.token.size(), 16u);
  EXPECT_EQ(info.bytes, 3 * 4096 + 8);
  char* own = (*made)->data();
  EXPECT_EQ(own[0], 0);  // zero-filled
  std::memcpy(own + 4096, "rows", 4);
  auto mapped = SharedRows::Map(info);
  ASSERT_TRUE(mapped.ok()) << mapped.status();
  EXPECT_EQ((*mapped)->bytes(), info.bytes);
  EXPECT_NE((*mapped)->data(), own);  // another mapping of the same pages
  EXPECT_EQ(std::memcmp((*mapped)->data() + 4096, "rows", 4), 0);
  std::memcpy((*mapped)->data() + info.bytes - 4, "back", 4);
  EXPECT_EQ(std::memcmp(own + info.bytes - 4, "back", 4), 0);
  mapped->reset();  // unmapping a copy leaves the creator's rows
  EXPECT_EQ(std::memcmp(own + 4096, "rows", 4), 0);
}

TEST(SharedRowsTest, OnlyTheAnnouncedFileWithItsTokenAndSizeIsMapped) {
  auto made = SharedRows::Create("test", 1024);
  ASSERT_TRUE(made.ok()) << made.status();
  const SharedRowsInfo info = (*made)->info();
  auto refused = [](const SharedRowsInfo& i) {
    absl::StatusOr<std::unique_ptr<SharedRows>> m = SharedRows::Map(i);
    EXPECT_FALSE(m.ok());
    return m.ok() ? std::string() : std::string(m.status().message());
  };
  SharedRowsInfo token = info;
  token.token[3] ^= 1;
  EXPECT_NE(refused(token).find("does not carry the server's token"), std::string::npos);
  SharedRowsInfo size = info;
  size.bytes = 2048;
  EXPECT_NE(refused(size).find("is not the server's shared rows"), std::string::npos);
  // Another descriptor of this process: a pipe, not a regular file.
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  SharedRowsInfo pipe = info;
  pipe.fd = pipe_fds[0];
  EXPECT_NE(refused(pipe).find("is not the server's shared rows"), std::string::npos);
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
  // A process that does not exist (a server on another machine, say).
  SharedRowsInfo gone = info;
  gone.pid = (int64_t{1} << 22) + 12345;  // above pid_max's largest value
  EXPECT_NE(refused(gone).find("cannot open /proc/"), std::string::npos);
  EXPECT_NE(refused(SharedRowsInfo{}).find("no shared rows announced"), std::string::npos);
}

}  // namespace
}  // namespace fanout::core
