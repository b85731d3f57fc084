#include "base/unique_fd.h"

#include <fcntl.h>

#include "gtest/gtest.h"

namespace fanout::base {
namespace {

bool IsOpen(int fd) { return fcntl(fd, F_GETFD) != -1; }

TEST(UniqueFdTest, ClosesOnceWhenDestroyedResetOrMovedOver) {
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  {
    UniqueFd a(p[0]);
    UniqueFd b(p[1]);
    EXPECT_TRUE(a.valid());
    UniqueFd c(std::move(a));
    EXPECT_FALSE(a.valid());
    EXPECT_EQ(c.get(), p[0]);
    c = std::move(b);  // closes p[0], takes p[1]
    EXPECT_FALSE(IsOpen(p[0]));
    EXPECT_TRUE(IsOpen(p[1]));
  }
  EXPECT_FALSE(IsOpen(p[1]));

  ASSERT_EQ(pipe(p), 0);
  UniqueFd r(p[0]);
  const int raw = r.release();  // given up: still open, no longer owned
  EXPECT_FALSE(r.valid());
  EXPECT_TRUE(IsOpen(raw));
  r.reset(raw);
  r.reset(raw);  // the same descriptor again is not closed under itself
  EXPECT_TRUE(IsOpen(raw));
  r.reset();
  EXPECT_FALSE(IsOpen(raw));
  ::close(p[1]);
}

}  // namespace
}  // namespace fanout::base
