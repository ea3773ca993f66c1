// Python's string operations (str.strip, str.split, str.replace, ...) on UTF-8,
// shared by the str methods and the filters (trim, replace, title, ...).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace submoe::jinja {

// chars null: Python's whitespace (ASCII); else any code point of *chars.
std::string strip(const std::string& s, const std::string* chars, bool left, bool right);
// sep null: runs of whitespace, no empty parts; maxsplit < 0: no limit; from_right:
// str.rsplit.
std::vector<std::string> split(const std::string& s, const std::string* sep, int64_t maxsplit, bool from_right);
std::vector<std::string> split_lines(const std::string& s);
std::string replace(const std::string& s, const std::string& old, const std::string& with, int64_t count);
std::string ascii_upper(std::string s);
std::string ascii_lower(std::string s);
std::string title_case(const std::string& s);
std::string capitalize(const std::string& s);
// str.isdigit / isalpha / isalnum / isspace / isupper / islower over ASCII.
bool ascii_class(const std::string& s, std::string_view method);

}  // namespace submoe::jinja
