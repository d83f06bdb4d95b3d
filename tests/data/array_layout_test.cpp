// Where an IDX or .npy array lies in its bytes (src/data/array_layout.cpp), parsed without LibTorch:
// the layout of a whole array, and the reason for anything else.
#include "data/array_layout.h"

#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/test_util.h"

namespace baton {
namespace {

using testing::error_of;
using ::testing::HasSubstr;

std::string idx_error(const std::string& bytes) {
  return error_of([&] { parse_idx_layout(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size()); });
}

// A .npy version 1.0 file: magic, header length, the header padded to 64 bytes with a newline, data.
std::string npy(const std::string& dict, std::size_t data_bytes) {
  std::string header = dict;
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  return out + header + std::string(data_bytes, '\0');
}

ArrayLayout parse_npy(const std::string& bytes) {
  return parse_npy_layout(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
}

std::string npy_error(const std::string& bytes) {
  return error_of([&] { parse_npy(bytes); });
}

TEST(ArrayLayout, AnIdxHeaderGivesTheShapeAndWhereTheBigEndianDataStart) {
  const std::string header("\x00\x00\x08\x03\x00\x00\x00\x02\x00\x00\x00\x03\x00\x00\x00\x04", 16);
  const std::string bytes = header + std::string(24, '\x01');
  const ArrayLayout layout = parse_idx_layout(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
  EXPECT_EQ(layout.dtype, "uint8");
  EXPECT_EQ(layout.shape, (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(layout.offset, 16U);
  EXPECT_EQ(layout.count, 24U);
  EXPECT_TRUE(layout.big_endian);
  EXPECT_THAT(idx_error(header + std::string(23, '\x01')),
              HasSubstr("IDX header declares [2, 3, 4] (40 bytes) but the file has 39 bytes"));
  EXPECT_EQ(idx_error(std::string("\x00\x00", 2)), "too short for an IDX file (2 bytes)");
  EXPECT_THAT(idx_error("PK\x03\x04"), HasSubstr("not an IDX file"));
  EXPECT_THAT(idx_error(std::string("\x00\x00\x07\x01\x00\x00\x00\x01\x00", 9)), HasSubstr("unknown IDX element type"));
  EXPECT_EQ(idx_error(std::string("\x00\x00\x08\x00", 4)), "IDX header says 0 dimensions");
  EXPECT_THAT(idx_error(std::string("\x00\x00\x08\x05\x00\x00\x00\x01", 8)), HasSubstr("truncated IDX header"));
}

TEST(ArrayLayout, ANpyHeaderGivesDtypeShapeAndOffset) {
  const std::string bytes = npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }", 24);
  const ArrayLayout layout = parse_npy(bytes);
  EXPECT_EQ(layout.dtype, "float32");
  EXPECT_EQ(layout.element, 4U);
  EXPECT_EQ(layout.shape, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(layout.offset, bytes.size() - 24);  // after the header, padded to 64 bytes
  EXPECT_EQ(layout.offset % 64, 0U);
  EXPECT_EQ(layout.count, 6U);
  EXPECT_FALSE(layout.big_endian);
  EXPECT_EQ(parse_npy(npy("{'descr': '|u1', 'fortran_order': False, 'shape': (5,), }", 5)).shape,
            (std::vector<int64_t>{5}));
  EXPECT_EQ(parse_npy(npy("{'descr': '<i8', 'fortran_order': False, 'shape': (), }", 8)).count, 1U);  // a scalar
}

TEST(ArrayLayout, WhatANpyReaderCannotTakeIsSaid) {
  EXPECT_EQ(npy_error("not numpy at all"), "not a .npy file (bad magic)");
  EXPECT_EQ(npy_error(npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", 16)),
            "Fortran-order arrays are not supported; save with C order");
  EXPECT_EQ(npy_error(npy("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", 8)),
            "big-endian dtype '>f4' is not supported");
  EXPECT_THAT(npy_error(npy("{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", 16)),
              HasSubstr("unsupported dtype '<c8'"));
  EXPECT_THAT(npy_error(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }", 20)),
              HasSubstr("declares shape (3, 2) of <f4 (24 bytes) but the file has 20 bytes of data"));
  EXPECT_EQ(npy_error(npy("{'descr': '<f4', 'fortran_order': False, }", 4)), ".npy header has no 'shape'");
  EXPECT_THAT(npy_error(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", 4)),
              HasSubstr("a negative dimension"));
}

}  // namespace
}  // namespace baton
