#include "jinja/string_ops.h"

#include <algorithm>

#include "jinja/utf8.h"

namespace submoe::jinja {
namespace {

// Python's str.isspace() over ASCII: \t \n \v \f \r, space and \x1c-\x1f.
bool py_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f); }
bool is_alpha(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

std::vector<std::string> code_points(const std::string& s) {
  const std::vector<size_t> offsets = code_point_offsets(s);
  std::vector<std::string> out;
  for (size_t i = 0; i + 1 < offsets.size(); ++i) out.push_back(s.substr(offsets[i], offsets[i + 1] - offsets[i]));
  return out;
}

}  // namespace

std::string strip(const std::string& s, const std::string* chars, bool left, bool right) {
  if (!chars) {
    size_t b = 0, e = s.size();
    if (left)
      while (b < e && py_space(static_cast<unsigned char>(s[b]))) ++b;
    if (right)
      while (e > b && py_space(static_cast<unsigned char>(s[e - 1]))) --e;
    return s.substr(b, e - b);
  }
  const std::vector<std::string> set = code_points(*chars);
  const std::vector<std::string> cps = code_points(s);
  auto in_set = [&](const std::string& cp) { return std::find(set.begin(), set.end(), cp) != set.end(); };
  size_t b = 0, e = cps.size();
  if (left)
    while (b < e && in_set(cps[b])) ++b;
  if (right)
    while (e > b && in_set(cps[e - 1])) --e;
  std::string out;
  for (size_t i = b; i < e; ++i) out += cps[i];
  return out;
}

std::vector<std::string> split(const std::string& s, const std::string* sep, int64_t maxsplit, bool from_right) {
  std::vector<std::string> parts;
  if (sep) {
    if (!from_right) {
      size_t start = 0;
      for (size_t at = s.find(*sep); at != std::string::npos && (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit);
           at = s.find(*sep, start)) {
        parts.push_back(s.substr(start, at - start));
        start = at + sep->size();
      }
      parts.push_back(s.substr(start));
      return parts;
    }
    size_t end = s.size();
    while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
      if (end < sep->size()) break;
      const size_t at = s.rfind(*sep, end - sep->size());
      if (at == std::string::npos) break;
      parts.push_back(s.substr(at + sep->size(), end - at - sep->size()));
      end = at;
    }
    parts.push_back(s.substr(0, end));
    std::reverse(parts.begin(), parts.end());
    return parts;
  }
  // Whitespace runs; the unsplit remainder keeps its inner whitespace.
  if (!from_right) {
    size_t i = 0;
    while (i < s.size()) {
      while (i < s.size() && py_space(static_cast<unsigned char>(s[i]))) ++i;
      if (i >= s.size()) break;
      if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
        size_t e = s.size();
        while (e > i && py_space(static_cast<unsigned char>(s[e - 1]))) --e;
        parts.push_back(s.substr(i, e - i));
        break;
      }
      size_t j = i;
      while (j < s.size() && !py_space(static_cast<unsigned char>(s[j]))) ++j;
      parts.push_back(s.substr(i, j - i));
      i = j;
    }
    return parts;
  }
  size_t e = s.size();
  while (e > 0) {
    while (e > 0 && py_space(static_cast<unsigned char>(s[e - 1]))) --e;
    if (e == 0) break;
    if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
      size_t b = 0;
      while (b < e && py_space(static_cast<unsigned char>(s[b]))) ++b;
      parts.push_back(s.substr(b, e - b));
      break;
    }
    size_t b = e;
    while (b > 0 && !py_space(static_cast<unsigned char>(s[b - 1]))) --b;
    parts.push_back(s.substr(b, e - b));
    e = b;
  }
  std::reverse(parts.begin(), parts.end());
  return parts;
}

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '\n' || c == '\r' || c == '\v' || c == '\f' || (c >= 0x1c && c <= 0x1e)) {
      lines.push_back(s.substr(start, i - start));
      if (c == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
      start = i + 1;
    }
  }
  if (start < s.size()) lines.push_back(s.substr(start));
  return lines;
}

std::string replace(const std::string& s, const std::string& old, const std::string& with, int64_t count) {
  std::string out;
  int64_t done = 0;
  if (old.empty()) {
    // Python inserts `with` before every code point and at the end.
    const std::vector<std::string> cps = code_points(s);
    for (const std::string& cp : cps) {
      if (count < 0 || done < count) {
        out += with;
        ++done;
      }
      out += cp;
    }
    if (count < 0 || done < count) out += with;
    return out;
  }
  size_t start = 0;
  for (size_t at = s.find(old); at != std::string::npos && (count < 0 || done < count); at = s.find(old, start)) {
    out.append(s, start, at - start);
    out += with;
    start = at + old.size();
    ++done;
  }
  out.append(s, start, std::string::npos);
  return out;
}

std::string ascii_upper(std::string s) {
  for (char& c : s)
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  return s;
}

std::string ascii_lower(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}

std::string title_case(const std::string& s) {
  std::string out = s;
  bool previous_cased = false;
  for (char& c : out) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (is_alpha(u)) {
      c = previous_cased ? ascii_lower(std::string(1, c))[0] : ascii_upper(std::string(1, c))[0];
      previous_cased = true;
    } else {
      previous_cased = false;
    }
  }
  return out;
}

std::string capitalize(const std::string& s) {
  std::string out = ascii_lower(s);
  if (!out.empty() && out[0] >= 'a' && out[0] <= 'z') out[0] = static_cast<char>(out[0] - 'a' + 'A');
  return out;
}

bool ascii_class(const std::string& s, std::string_view method) {
  if (s.empty()) return false;
  bool any_cased = false;
  for (unsigned char c : s) {
    const bool digit = c >= '0' && c <= '9';
    if (method == "isdigit" && !digit) return false;
    if (method == "isalpha" && !is_alpha(c)) return false;
    if (method == "isalnum" && !is_alpha(c) && !digit) return false;
    if (method == "isspace" && !py_space(c)) return false;
    if (method == "isupper" && c >= 'a' && c <= 'z') return false;
    if (method == "islower" && c >= 'A' && c <= 'Z') return false;
    any_cased = any_cased || is_alpha(c);
  }
  return (method == "isupper" || method == "islower") ? any_cased : true;
}

}  // namespace submoe::jinja
