// JSON text in and out, bounded for any input: every JSON reader parses
// through ParseJson (or ParseJsonLine), which refuses nesting deeper than
// kMaxJsonDepth before anything walks the value recursively (nlohmann's
// dump, copy and comparison recurse once per level: 10^5 nested brackets
// overflow the stack). Every JSON the tool writes goes through DumpJson,
// which replaces bytes that are not UTF-8 (a name, a type or a path read
// from a file or the command line) by U+FFFD instead of throwing.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace remat {

// Arrays and objects nested deeper than this are refused by every reader.
// Real files nest a handful of levels; this leaves room for any of them and
// keeps each recursive walk far from the stack's end, also on the smaller
// stacks of worker threads.
constexpr int kMaxJsonDepth = 256;

// The offset of the first '[' or '{' nested deeper than `max_depth` in the
// JSON text (brackets inside strings do not count), or npos.
size_t FindExcessNesting(std::string_view text, int max_depth = kMaxJsonDepth);

// Parses JSON text; `source` names it in errors. Throws InputError
// "<source>:<line>: not valid JSON: <why>" on a syntax error, a number
// beyond double's range, nesting deeper than kMaxJsonDepth, a NUL byte
// (nlohmann's parser would stop there and ignore what follows) or a key
// that one object has twice. Both parsers, and FindExcessNesting, throw
// Stopped once a stop is requested (model/stop.h): a large document may
// take seconds.
nlohmann::json ParseJson(std::string_view text, const std::string& source);

// Parses one line (of a journal, say) without throwing on bad input: a
// discarded value (is_discarded()) if it is not valid JSON as ParseJson
// reads it.
nlohmann::json ParseJsonLine(std::string_view text);

// The JSON text of `value` (nlohmann::json or ordered_json; `indent` as
// dump's); bytes that are not UTF-8 become U+FFFD rather than an exception.
template <typename Json>
std::string DumpJson(const Json& value, int indent = -1) {
  return value.dump(indent, ' ', false, Json::error_handler_t::replace);
}

// A short description of a value read from a user's file, for an error
// message: numbers, booleans and null as written, a string quoted (cut
// after 60 bytes), an array or object by its size only. Never recursive.
std::string DescribeJson(const nlohmann::json& value);

}  // namespace remat
