// The canonical text form as lines: the editing model of the mutation generator (mutate.h).
//
// ir::print_graph writes one statement per line, indented two spaces per level (kernel, block,
// thread), with the tensor type as a trailing comment. A Line keeps a statement's parts (outputs,
// callee, arguments, type) so that a mutation can swap arguments, rename an output or insert a
// statement without re-deriving the grammar; render() writes the text back (without the type
// comments) and the parser decides whether the result is a valid uGraph. Only text that
// print_graph produced is supported: these helpers assume its layout, never check it.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mugraph::verify::lines {

struct Line {
  int depth = 0;                  // 0 kernel, 1 block graph, 2 thread graph
  std::string lhs;                // "y", "NP, DP"; empty for savers and the rest
  std::string op;                 // callee; "input", "output" and "}" for the other statements
  std::vector<std::string> args;  // operands, then attr=value, as printed
  bool opens = false;             // the line opens a block or thread graph ("... {")
  std::string raw;                // input and "}" lines, verbatim
  std::string type;               // the printed type comment ("f16[4, 64]")
};
using Lines = std::vector<Line>;

std::string trim(std::string_view s);
// Splits at the commas outside brackets: "a, imap={x:0, y:1}" -> {"a", "imap={x:0, y:1}"}.
std::vector<std::string> split_top(std::string_view s);
std::string join(const std::vector<std::string>& v);  // with ", "

Lines parse_lines(const std::string& text);
std::string render(const Line& l);
std::string render(const Lines& ls);

// Per line, the index of the header line that opens its scope (-1: the kernel graph). A header
// belongs to the outer scope, its closing "}" to the inner one.
std::vector<int> scopes(const Lines& ls);
// The closing "}" of the graph header h.
int close_of(const Lines& ls, const std::vector<int>& sc, int h);

bool is_attr(const std::string& arg);
std::vector<int> operand_positions(const Line& l);  // the arguments that are not attr=value
// The value of attribute `key` ("forloop"), or "" when absent; set_attr replaces it.
std::string attr(const Line& l, const std::string& key);
void set_attr(Line& l, const std::string& key, const std::string& value);
bool single_lhs(const Line& l);
// A statement computing one tensor from operands with an op of the op table, at any level.
bool is_compute(const Line& l);

// A tensor a statement may read, with its printed type.
struct Named {
  std::string name, type;
};
// Splits "f16[2, 8], f16[2, 1]" into its types.
std::vector<std::string> split_types(const std::string& t);
// The tensors line i may read: earlier definitions of its scope (kernel inputs, outputs of
// earlier statements) and, in a thread graph, the thread inputs.
std::vector<Named> visible(const Lines& ls, const std::vector<int>& sc, int i);
std::string type_of(const std::vector<Named>& v, const std::string& name);  // "" if unknown
std::vector<int64_t> dims_of(const std::string& type);  // "f16[4, 64]" -> {4, 64}
std::string shape_text(const std::vector<int64_t>& d);  // {4, 64} -> "[4, 64]"
// A name no statement defines yet: base + "_m" + k.
std::string fresh(const Lines& ls, const std::string& base);

// Renames line i's (single) output n to a fresh name and inserts `n = op(fresh, attrs...)`
// right after the statement (after its closing brace when it opens a graph), so every reader
// of n now reads the new statement. Returns the new line's index.
int insert_after(Lines& ls, int i, const std::string& op, const std::vector<std::string>& attrs,
                 const std::string& type = "");
// Replaces operand `from` by `to` after line i: in i's scope, and in graphs opened there until
// they define `from` themselves. Returns the number of replacements.
int substitute_after(Lines& ls, int i, const std::string& from, const std::string& to);
// The (line, argument) positions reading `name` after line i in i's own scope, graph headers
// excepted (their operands are named inside the graph too).
std::vector<std::pair<int, int>> uses_after(const Lines& ls, int i, const std::string& name);

}  // namespace mugraph::verify::lines
