// Ranks of a process group as threads of one test process, rendezvousing on loopback.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "trainer/dist.h"

namespace fanout::trainer::testing {

// Runs fn(options) for ranks [0, world) on threads of their own, each with rank, world size,
// timeout and coordinator set. Rank 0 listens on port 0 and hands the port it got to the others.
template <typename Fn>
void RunRanks(int world, std::chrono::milliseconds timeout, Fn fn) {
  std::promise<int> port_promise;
  std::shared_future<int> port = port_promise.get_future().share();
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      DistOptions o;
      o.rank = r;
      o.world_size = world;
      o.timeout = timeout;
      if (r == 0) {
        o.coordinator = "127.0.0.1:0";
        o.on_coordinator_listening = [&](int p) { port_promise.set_value(p); };
      } else {
        if (port.wait_for(timeout) != std::future_status::ready) {
          ADD_FAILURE() << "rank 0 never listened";
          return;
        }
        o.coordinator = "127.0.0.1:" + std::to_string(port.get());
      }
      fn(o);
    });
  }
  for (std::thread& t : threads) t.join();
}

}  // namespace fanout::trainer::testing
