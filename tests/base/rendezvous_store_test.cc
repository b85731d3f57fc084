// The trainers' rendezvous store (base/rendezvous_store.h), LibTorch-free so that it also runs
// under the sanitizers and clang's thread-safety analysis.
#include "base/rendezvous_store.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "gtest/gtest.h"

namespace fanout::base {
namespace {

// The trainers' rendezvous store: c10d's semantics, one address, a token, bounded input.
TEST(RendezvousStoreTest, KeyValueOperations) {
  auto server = StoreServer::Start("127.0.0.1", 0, "");
  ASSERT_TRUE(server.ok()) << server.status();
  auto a = StoreClient::Connect("127.0.0.1", (*server)->port(), "", std::chrono::seconds(5));
  auto b = StoreClient::Connect("127.0.0.1", (*server)->port(), "", std::chrono::seconds(5));
  ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
  StoreClient& x = **a;
  StoreClient& y = **b;
  ASSERT_TRUE(x.Set("k", std::string("v\0w", 3)).ok());
  EXPECT_EQ(*y.Get("k", std::chrono::seconds(1)), std::string("v\0w", 3));
  EXPECT_EQ(*x.Add("n", 5), 5);
  EXPECT_EQ(*y.Add("n", -2), 3);
  EXPECT_EQ(x.Add("k", 1).status().code(), absl::StatusCode::kInternal);  // not an integer
  EXPECT_TRUE(*x.Check({"k", "n"}));
  EXPECT_FALSE(*x.Check({"k", "missing"}));
  EXPECT_EQ(*x.CompareSet("c", "", "first"), "first");
  EXPECT_EQ(*x.CompareSet("c", "wrong", "second"), "first");
  EXPECT_EQ(*x.CompareSet("c", "first", "second"), "second");
  EXPECT_EQ(*x.NumKeys(), 3);
  EXPECT_TRUE(*x.Delete("c"));
  EXPECT_FALSE(*x.Delete("c"));
  // Get and Wait block until another rank sets the key, or time out naming it.
  auto missing = x.Get("late", std::chrono::milliseconds(200));
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_NE(missing.status().message().find("'late'"), std::string::npos) << missing.status();
  auto waiting = x.Wait({"k", "late"}, std::chrono::milliseconds(200));
  EXPECT_EQ(waiting.code(), absl::StatusCode::kDeadlineExceeded) << waiting;
  // Another rank sets it while this one waits (or just before: either order must work).
  std::thread setter([&] { EXPECT_TRUE(y.Set("late", "here").ok()); });
  EXPECT_TRUE(x.Wait({"k", "late"}, std::chrono::seconds(10)).ok());
  setter.join();
  EXPECT_EQ(*x.Get("late", std::chrono::seconds(1)), "here");
}

TEST(RendezvousStoreTest, ListensOnOneAddressAndChecksTheToken) {
  EXPECT_EQ(StoreServer::Start("0.0.0.0", 0, "").status().code(), absl::StatusCode::kInvalidArgument);
  auto server = StoreServer::Start("127.0.0.1", 0, "sixteen-chars-token");
  ASSERT_TRUE(server.ok()) << server.status();
  const int port = (*server)->port();
  // Bound to 127.0.0.1 only: another loopback address of this machine does not reach it.
  auto other = StoreClient::Connect("127.0.0.2", port, "sixteen-chars-token", std::chrono::milliseconds(300));
  EXPECT_EQ(other.status().code(), absl::StatusCode::kUnavailable) << other.status();
  auto none = StoreClient::Connect("127.0.0.1", port, "", std::chrono::seconds(5));
  EXPECT_EQ(none.status().code(), absl::StatusCode::kUnauthenticated) << none.status();
  auto wrong = StoreClient::Connect("127.0.0.1", port, "sixteen-chars-tokeN", std::chrono::seconds(5));
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kUnauthenticated) << wrong.status();
  auto right = StoreClient::Connect("127.0.0.1", port, "sixteen-chars-token", std::chrono::seconds(5));
  ASSERT_TRUE(right.ok()) << right.status();
  EXPECT_TRUE((*right)->Set("a", "b").ok());
}

TEST(RendezvousStoreTest, GarbageIsDroppedAndTheStoreServesOn) {
  auto server = StoreServer::Start("127.0.0.1", 0, "");
  ASSERT_TRUE(server.ok()) << server.status();
  const int port = (*server)->port();
  for (const std::string& junk : {std::string("\xff\xff\xff\xff"), std::string("GET / HTTP/1.1\r\n\r\n"),
                                  std::string("\x05\0\0\0\x01\xff\xff\xff\x7f")}) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    ASSERT_EQ(write(fd, junk.data(), junk.size()), static_cast<ssize_t>(junk.size()));
    shutdown(fd, SHUT_WR);
    char buf[64];
    while (read(fd, buf, sizeof(buf)) > 0) {
    }
    close(fd);
  }
  auto c = StoreClient::Connect("127.0.0.1", port, "", std::chrono::seconds(5));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE((*c)->Set("still", "alive").ok());
}

}  // namespace
}  // namespace fanout::base
