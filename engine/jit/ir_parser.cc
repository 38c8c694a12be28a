// A recursive-descent parser for the IR text form:
//
//   graph   := 'graph' '(' [param {',' param}] ')' ':' {stmt} 'return' '(' [value {',' value}] ')'
//   param   := VALUE ':' type
//   type    := 'Tensor' | 'Tensor' '[' ']' | 'float'
//   stmt    := [param {',' param} '='] OPNAME [attrs] '(' [value {',' value}] ')' ['{' graph '}']
//   attrs   := '[' NAME '=' attr {',' NAME '=' attr} ']'
//   attr    := NUMBER | '[' [NUMBER {',' NUMBER}] ']'
#include "engine/jit/ir_parser.h"

#include <cctype>
#include <cmath>
#include <unordered_map>
#include <vector>

#include "engine/jit/schema.h"
#include "engine/jit/verifier.h"

namespace ag::jit {
namespace {

enum class Tok { Value, Ident, Number, Punct, End };

struct Token {
  Tok kind;
  std::string text;
  int line;
};

std::vector<Token> tokenize(const std::string& src) {
  std::vector<Token> out;
  int line = 1;
  size_t i = 0;
  auto isIdentChar = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
  };
  while (i < src.size()) {
    char c = src[i];
    if (c == '\n') {
      ++line;
      ++i;
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (c == '#') {  // comment to end of line
      while (i < src.size() && src[i] != '\n') ++i;
    } else if (c == '%') {
      size_t j = i + 1;
      while (j < src.size() && isIdentChar(src[j])) ++j;
      if (j == i + 1)
        throw IrError("line " + std::to_string(line) + ": '%' must be followed by a value name");
      out.push_back({Tok::Value, src.substr(i + 1, j - i - 1), line});
      i = j;
    } else if (std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '+') {
      size_t j = i + 1;
      while (j < src.size() &&
             (std::isalnum(static_cast<unsigned char>(src[j])) || src[j] == '.' ||
              ((src[j] == '-' || src[j] == '+') && (src[j - 1] == 'e' || src[j - 1] == 'E')))) {
        ++j;
      }
      out.push_back({Tok::Number, src.substr(i, j - i), line});
      i = j;
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      // Identifiers may contain '::' (op names such as aten::add).
      size_t j = i;
      while (j < src.size()) {
        if (isIdentChar(src[j])) {
          ++j;
        } else if (src[j] == ':' && j + 1 < src.size() && src[j + 1] == ':') {
          j += 2;
        } else {
          break;
        }
      }
      out.push_back({Tok::Ident, src.substr(i, j - i), line});
      i = j;
    } else if (std::string("()[]{},:=").find(c) != std::string::npos) {
      out.push_back({Tok::Punct, std::string(1, c), line});
      ++i;
    } else {
      throw IrError("line " + std::to_string(line) + ": unexpected character '" +
                    std::string(1, c) + "'");
    }
  }
  out.push_back({Tok::End, "<end of input>", line});
  return out;
}

class Parser {
 public:
  explicit Parser(const std::string& text) : toks_(tokenize(text)) {}

  std::unique_ptr<Graph> parseTopLevel() {
    auto g = std::make_unique<Graph>();
    parseGraphInto(*g);
    if (peek().kind != Tok::End) fail("expected end of input after 'return (...)'");
    return g;
  }

 private:
  using Scope = std::unordered_map<std::string, Value*>;

  const Token& peek() const { return toks_[pos_]; }
  Token next() { return toks_[pos_ == toks_.size() - 1 ? pos_ : pos_++]; }
  [[noreturn]] void fail(const std::string& msg) const {
    throw IrError("line " + std::to_string(peek().line) + ": " + msg + " (at '" + peek().text +
                  "')");
  }
  bool isPunct(const char* p) const { return peek().kind == Tok::Punct && peek().text == p; }
  void expectPunct(const char* p) {
    if (!isPunct(p)) fail(std::string("expected '") + p + "'");
    next();
  }
  bool acceptPunct(const char* p) {
    if (!isPunct(p)) return false;
    next();
    return true;
  }

  Type parseType() {
    if (peek().kind != Tok::Ident) fail("expected a type (Tensor, Tensor[], float)");
    std::string t = next().text;
    if (t == "float") return Type::Float;
    if (t == "Tensor") {
      if (acceptPunct("[")) {
        expectPunct("]");
        return Type::TensorList;
      }
      return Type::Tensor;
    }
    --pos_;
    fail("unknown type '" + t + "'");
  }

  std::string parseValueName() {
    if (peek().kind != Tok::Value) fail("expected a value (%name)");
    return next().text;
  }

  Value* lookup(const Scope& scope, const std::string& name) {
    auto it = scope.find(name);
    if (it == scope.end()) fail("use of undefined value %" + name);
    return it->second;
  }

  void define(Graph& g, Scope& scope, Value* v, const std::string& name) {
    if (scope.count(name) != 0) fail("redefinition of value %" + name);
    g.setName(v, name);
    scope[name] = v;
  }

  double parseNumber(bool* is_int) {
    if (peek().kind == Tok::Ident && (peek().text == "nan" || peek().text == "inf")) {
      *is_int = false;
      return next().text == "nan" ? std::nan("") : INFINITY;
    }
    if (peek().kind != Tok::Number) fail("expected a number");
    std::string s = next().text;
    if (s == "-inf") {
      *is_int = false;
      return -INFINITY;
    }
    *is_int = s.find_first_of(".eEn") == std::string::npos;
    try {
      size_t used = 0;
      double d = std::stod(s, &used);
      if (used != s.size()) throw std::invalid_argument(s);
      return d;
    } catch (const std::exception&) {
      --pos_;
      fail("malformed number '" + s + "'");
    }
  }

  AttributeValue parseAttributeValue() {
    if (acceptPunct("[")) {
      std::vector<int64_t> ints;
      if (!acceptPunct("]")) {
        do {
          bool is_int = false;
          double d = parseNumber(&is_int);
          if (!is_int) fail("int[] attributes hold integers only");
          ints.push_back(static_cast<int64_t>(d));
        } while (acceptPunct(","));
        expectPunct("]");
      }
      return ints;
    }
    bool is_int = false;
    double d = parseNumber(&is_int);
    if (is_int) return static_cast<int64_t>(d);
    return d;
  }

  Attributes parseAttributes() {
    Attributes attrs;
    if (!acceptPunct("[")) return attrs;
    do {
      if (peek().kind != Tok::Ident) fail("expected an attribute name");
      std::string name = next().text;
      expectPunct("=");
      if (attrs.count(name) != 0) fail("duplicate attribute '" + name + "'");
      attrs[name] = parseAttributeValue();
    } while (acceptPunct(","));
    expectPunct("]");
    return attrs;
  }

  std::vector<Value*> parseOperands(const Scope& scope) {
    std::vector<Value*> values;
    expectPunct("(");
    if (!acceptPunct(")")) {
      do {
        values.push_back(lookup(scope, parseValueName()));
      } while (acceptPunct(","));
      expectPunct(")");
    }
    return values;
  }

  void parseStatement(Graph& g, Scope& scope) {
    std::vector<std::pair<std::string, Type>> outs;
    if (peek().kind == Tok::Value) {
      do {
        std::string name = parseValueName();
        expectPunct(":");
        outs.emplace_back(name, parseType());
      } while (acceptPunct(","));
      expectPunct("=");
    }
    if (peek().kind != Tok::Ident || peek().text.find("::") == std::string::npos) {
      fail("expected an op name such as aten::add");
    }
    int line = peek().line;
    std::string kind = next().text;
    if (lookupSchema(kind) == nullptr) {
      --pos_;
      fail("unknown op '" + kind + "'");
    }
    Attributes attrs = parseAttributes();
    std::vector<Value*> inputs = parseOperands(scope);

    Node* n = g.create(kind, inputs, std::move(attrs), static_cast<int>(outs.size()));
    g.appendNode(n);
    for (size_t i = 0; i < outs.size(); ++i) {
      if (n->output(i)->type() != outs[i].second) {
        // Output types come from the schema; a declared type that disagrees is
        // a type mismatch the reader should hear about here, with a line.
        throw IrError("line " + std::to_string(line) + ": type mismatch: " + kind + " output " +
                      std::to_string(i) + " (%" + outs[i].first + ") has type " +
                      typeName(n->output(i)->type()) + ", declared " + typeName(outs[i].second));
      }
      define(g, scope, n->output(i), outs[i].first);
    }
    if (acceptPunct("{")) {
      if (peek().kind != Tok::Ident || peek().text != "graph") fail("expected 'graph' after '{'");
      auto sub = std::make_unique<Graph>();
      parseGraphInto(*sub);
      expectPunct("}");
      n->setSubgraph(std::move(sub));
    }
  }

  void parseGraphInto(Graph& g) {
    Scope scope;
    if (peek().kind != Tok::Ident || peek().text != "graph") fail("expected 'graph'");
    next();
    expectPunct("(");
    if (!acceptPunct(")")) {
      do {
        std::string name = parseValueName();
        expectPunct(":");
        Type t = parseType();
        Value* v = g.addInput(t);
        define(g, scope, v, name);
      } while (acceptPunct(","));
      expectPunct(")");
    }
    expectPunct(":");
    while (!(peek().kind == Tok::Ident && peek().text == "return")) {
      if (peek().kind == Tok::End) fail("missing 'return (...)'");
      parseStatement(g, scope);
    }
    next();  // 'return'
    for (Value* v : parseOperands(scope)) g.registerOutput(v);
  }

  std::vector<Token> toks_;
  size_t pos_ = 0;
};

}  // namespace

std::unique_ptr<Graph> parseGraph(const std::string& text) {
  std::unique_ptr<Graph> g = Parser(text).parseTopLevel();
  verify(*g);
  return g;
}

}  // namespace ag::jit
