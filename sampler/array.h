// The arrays of a mini-batch (sampler/minibatch.h): a vector for whoever builds a batch, that can
// also borrow read-only memory someone else keeps alive (a sampler process's batch file, mapped by
// the trainer), and that can hand its memory on without a copy (the trainer wraps it in a tensor).
// So a block's index arrays are written once, by the sampler, and never copied on the trainer's
// side: not out of the batch file, not into tensors.
//
// Share() freezes the contents seen by its holders: a later mutation through this Array copies
// first (copy-on-write), so a tensor made from Share() never changes under its user. Non-const
// data() and operator[] count as mutations: read a shared or borrowed Array through a const
// reference, or it is copied. Copying an
// Array copies its elements (an owned array) or shares the borrowed memory (read-only anyway).
// Not thread-safe: one thread builds or reads an Array at a time, like a std::vector.
#pragma once

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <span>
#include <utility>
#include <vector>

namespace fanout::sampler {

template <typename T>
class Array {
 public:
  using value_type = T;

  Array() = default;
  Array(std::initializer_list<T> values) : own_(std::make_shared<std::vector<T>>(values)) {}
  Array(std::vector<T>&& values) : own_(std::make_shared<std::vector<T>>(std::move(values))) {}  // NOLINT
  Array(const std::vector<T>& values) : own_(std::make_shared<std::vector<T>>(values)) {}       // NOLINT
  explicit Array(size_t n, const T& value = T()) : own_(std::make_shared<std::vector<T>>(n, value)) {}
  Array(const Array& other) { *this = other; }
  Array(Array&& other) noexcept = default;
  Array& operator=(const Array& other) {
    if (this == &other) return *this;
    borrowed_owner_ = other.borrowed_owner_;
    borrowed_ = other.borrowed_;
    borrowed_size_ = other.borrowed_size_;
    own_ = other.own_ == nullptr ? nullptr : std::make_shared<std::vector<T>>(*other.own_);
    shared_ = false;
    return *this;
  }
  Array& operator=(Array&& other) noexcept = default;

  // `n` elements at `data`, kept alive (and unchanged) by `owner`.
  static Array Borrow(std::shared_ptr<const void> owner, const T* data, size_t n) {
    Array a;
    a.borrowed_owner_ = std::move(owner);
    a.borrowed_ = data;
    a.borrowed_size_ = n;
    return a;
  }
  // Something that keeps data() alive and unchanged for as long as it is held (for a tensor made
  // over data() without a copy).
  std::shared_ptr<const void> Share() const {
    if (own_ == nullptr) return borrowed_owner_;
    shared_ = true;
    return own_;
  }
  bool borrowed() const { return own_ == nullptr && borrowed_ != nullptr; }

  size_t size() const { return own_ != nullptr ? own_->size() : borrowed_size_; }
  bool empty() const { return size() == 0; }
  const T* data() const { return own_ != nullptr ? own_->data() : borrowed_; }
  T* data() { return Mutable().data(); }
  const T& operator[](size_t i) const { return data()[i]; }
  T& operator[](size_t i) { return Mutable()[i]; }
  // Iteration only reads, so that a range-for over a borrowed array never copies it.
  const T& front() const { return data()[0]; }
  const T& back() const { return data()[size() - 1]; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size(); }
  operator std::span<const T>() const { return {data(), size()}; }  // NOLINT
  std::vector<T> ToVector() const { return std::vector<T>(begin(), end()); }

  void push_back(const T& v) { Mutable().push_back(v); }
  void pop_back() { Mutable().pop_back(); }
  void reserve(size_t n) { Mutable().reserve(n); }
  void resize(size_t n) { Mutable().resize(n); }
  void resize(size_t n, const T& v) { Mutable().resize(n, v); }
  void assign(size_t n, const T& v) { Mutable().assign(n, v); }
  template <typename It>
  void assign(It first, It last) {
    Mutable().assign(first, last);
  }
  void clear() { Mutable().clear(); }

  friend bool operator==(const Array& a, const Array& b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
  }
  friend bool operator==(const Array& a, const std::vector<T>& b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
  }

 private:
  // The owned vector, made (from the borrowed memory, or afresh) when the array changes, and
  // copied first when Share() has handed the current one out.
  std::vector<T>& Mutable() {
    if (own_ == nullptr) {
      own_ = std::make_shared<std::vector<T>>(borrowed_, borrowed_ + borrowed_size_);
      borrowed_owner_.reset();
      borrowed_ = nullptr;
      borrowed_size_ = 0;
    } else if (shared_) {
      own_ = std::make_shared<std::vector<T>>(*own_);
      shared_ = false;
    }
    return *own_;
  }

  std::shared_ptr<std::vector<T>> own_;
  std::shared_ptr<const void> borrowed_owner_;
  const T* borrowed_ = nullptr;
  size_t borrowed_size_ = 0;
  mutable bool shared_ = false;
};

using Int64Array = Array<int64_t>;
using Int32Array = Array<int32_t>;
using FloatArray = Array<float>;

}  // namespace fanout::sampler
