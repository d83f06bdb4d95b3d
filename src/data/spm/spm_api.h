// The C interface of libbaton_spm, baton's wrapper of SentencePiece, which src/data/tokenizer.cpp
// opens with dlopen (RTLD_LOCAL | RTLD_DEEPBIND) instead of linking it.
//
// Why: Debian's libsentencepiece carries its own copy of protobuf-lite 3.14 with every symbol
// exported, and Debian's LibTorch loads libprotobuf 3.21; linked into one program the two bind to
// each other's functions and the program crashes before main (a segfault in protobuf's static
// initialisers, or protobuf's version check aborting). Opened locally and deep-bound, SentencePiece
// calls its own protobuf and the program's stays the program's. Only plain C types cross: memory is
// never allocated on one side and freed on the other.
#pragma once

#include <stddef.h>

extern "C" {

struct baton_spm;

// Every function below, found with one dlsym.
struct baton_spm_api {
  // A model from its serialized bytes (a .model file's contents); null when they are not one.
  baton_spm* (*load)(const char* bytes, size_t size);
  void (*release)(baton_spm* model);
  int (*piece_size)(const baton_spm* model);
  int (*piece_to_id)(const baton_spm* model, const char* piece);
  int (*unk_id)(const baton_spm* model);
  int (*eos_id)(const baton_spm* model);
  int (*is_byte)(const baton_spm* model, int id);
  // The ids of `text`: how many there are (the first `capacity` written to `ids`), -1 on error.
  long (*encode)(const baton_spm* model, const char* text, size_t size, int* ids, size_t capacity);
  // The text of `ids`: its length (the first `capacity` bytes written to `out`), -1 on error.
  long (*decode)(const baton_spm* model, const int* ids, size_t count, char* out, size_t capacity);
  // The model's serialized bytes: their length (the first `capacity` written to `out`).
  long (*serialized)(const baton_spm* model, char* out, size_t capacity);
  // Trains on the lines `next` gives (it returns 1 and sets *line and *size, or 0 at the end, or -1
  // on an error of its own), with SentencePiece's options as `count` "key=value" strings. Returns
  // the trained model, or null with a message in `error` (at most `error_capacity` bytes, NUL-ended).
  baton_spm* (*train)(const char* const* options, size_t count,
                      int (*next)(void* context, const char** line, size_t* size), void* context, char* error,
                      size_t error_capacity);
  int (*bos_id)(const baton_spm* model);
};

// The library's one exported symbol.
const baton_spm_api* baton_spm_get_api();

}  // extern "C"
