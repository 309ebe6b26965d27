// A token scan of inactive preprocessor branches (inactive_branches.h).
#include "lint/statics/inactive_branches.h"

#include <set>

#include "clang/Lex/Lexer.h"
#include "clang/Lex/Token.h"

namespace atlas_lint {
namespace {

using llvm::StringRef;

struct Tok {
  std::string Text;
  unsigned Offset;
  bool Ident;
};

// The tokens of Text, without preprocessor directive lines. Of a conditional
// nested in the skipped range only the first branch is kept (both sides of
// `#if a {` `#else b {` `#endif` would unbalance the braces), and the text
// ends at a directive that closes the range itself (#else, #elif, #endif).
std::vector<Tok> Tokens(StringRef Text, const clang::LangOptions &LO) {
  std::vector<Tok> Out;
  // The lexer reads up to a terminating NUL: lex a copy that has one.
  const std::string Copy = Text.str();
  clang::Lexer L(clang::SourceLocation(), LO, Copy.c_str(), Copy.c_str(),
                 Copy.c_str() + Copy.size());
  clang::Token T;
  bool InDirective = false, NameNext = false;
  std::vector<bool> Taking;  // per nested conditional: in its first branch
  while (!L.LexFromRawLexer(T) || T.isNot(clang::tok::eof)) {
    if (T.is(clang::tok::eof)) break;
    if (T.isAtStartOfLine()) {
      InDirective = T.is(clang::tok::hash);
      NameNext = InDirective;
      if (InDirective) continue;
    }
    if (NameNext) {
      NameNext = false;
      StringRef D(Copy.data() + T.getLocation().getRawEncoding(),
                  T.getLength());
      if (D == "if" || D == "ifdef" || D == "ifndef") {
        Taking.push_back(true);
      } else if (D == "else" || D.startswith("elif")) {
        if (Taking.empty()) break;
        Taking.back() = false;
      } else if (D == "endif") {
        if (Taking.empty()) break;
        Taking.pop_back();
      }
    }
    if (InDirective) continue;
    bool Skip = false;
    for (bool B : Taking) Skip = Skip || !B;
    if (Skip) continue;
    unsigned Offset = T.getLocation().getRawEncoding();
    std::string S(Copy.data() + Offset, T.getLength());
    Out.push_back({S, Offset, T.is(clang::tok::raw_identifier)});
  }
  return Out;
}

bool IsOpen(const std::string &S) { return S == "(" || S == "[" || S == "{"; }
bool IsClose(const std::string &S) { return S == ")" || S == "]" || S == "}"; }

// Index of the token closing the group Toks[I] opens (or the end).
size_t Matching(const std::vector<Tok> &Toks, size_t I) {
  int Depth = 0;
  for (size_t K = I; K < Toks.size(); ++K) {
    if (IsOpen(Toks[K].Text)) ++Depth;
    if (IsClose(Toks[K].Text) && --Depth == 0) return K;
  }
  return Toks.size();
}

bool Has(const std::vector<Tok> &S, const char *Word) {
  for (const Tok &T : S) {
    if (T.Text == Word) return true;
  }
  return false;
}

// Attribute-like groups whose parentheses do not make a function declarator.
bool IsAttributeWord(const std::string &S) {
  static const std::set<std::string> kWords = {
      "__attribute__", "ATLAS_STATIC", "alignas",  "_Alignas",
      "__declspec",    "__align__",    "decltype", "__typeof__",
      "typeof",        "sizeof",       "_Atomic"};
  return kWords.count(S) != 0;
}

class Scanner {
 public:
  Scanner(std::vector<InactiveStatic> *Out) : Out(Out) {}

  void Scan(const std::vector<Tok> &Toks, size_t Begin, size_t End,
            const std::string &Fn) {
    size_t Start = Begin;
    for (size_t I = Begin; I < End; ++I) {
      const std::string &S = Toks[I].Text;
      if (S == ";") {
        Statement(Toks, Start, I, Fn);
        Start = I + 1;
      } else if (S == "{") {
        size_t Close = std::min(Matching(Toks, I), End);
        std::vector<Tok> Head(Toks.begin() + Start, Toks.begin() + I);
        bool Init = Has(Head, "=");
        bool Type = !Head.empty() &&
                    (Has(Head, "struct") || Has(Head, "union") ||
                     Has(Head, "enum") || Has(Head, "class")) &&
                    !Has(Head, "(");
        if (Init || Type) {
          I = Close;  // the statement goes on after the braces
          continue;
        }
        std::string Body = Fn;
        if (Fn.empty() && !Has(Head, "namespace") && !Has(Head, "extern")) {
          Body = FunctionName(Head);
        }
        Scan(Toks, I + 1, Close, Body);
        I = Close;
        Start = I + 1;
      } else if (S == "(" || S == "[") {
        I = std::min(Matching(Toks, I), End);
      }
    }
  }

 private:
  static std::string FunctionName(const std::vector<Tok> &Head) {
    for (size_t K = 1; K < Head.size(); ++K) {
      if (Head[K].Text == "(" && Head[K - 1].Ident &&
          !IsAttributeWord(Head[K - 1].Text)) {
        return Head[K - 1].Text;
      }
    }
    return "(unknown function)";
  }

  void Statement(const std::vector<Tok> &Toks, size_t Begin, size_t End,
                 const std::string &Fn) {
    std::vector<Tok> S(Toks.begin() + Begin, Toks.begin() + End);
    if (S.empty()) return;
    bool Static = Has(S, "static") || Has(S, "thread_local") ||
                  Has(S, "_Thread_local") || Has(S, "__thread");
    if (!Fn.empty() && !Static) return;  // an automatic local, or code
    for (const char *W :
         {"typedef", "using", "template", "friend", "static_assert",
          "_Static_assert", "return", "goto", "namespace", "operator"}) {
      if (Has(S, W)) return;
    }
    if (Has(S, "extern") && !Has(S, "=")) return;  // a declaration only
    if (Has(S, "constexpr")) return;
    if (!S[0].Ident) return;  // an expression statement
    // Declarators, split at top-level commas; a function declarator (a
    // parenthesis after the name, not after '*') is no variable.
    size_t PartStart = 0;
    for (size_t I = 0; I <= S.size(); ++I) {
      if (I < S.size() && IsOpen(S[I].Text)) {
        I = Matching(S, I);
        continue;
      }
      if (I == S.size() || S[I].Text == ",") {
        Declarator(S, PartStart, I, Fn);
        PartStart = I + 1;
      }
    }
  }

  void Declarator(const std::vector<Tok> &S, size_t Begin, size_t End,
                  const std::string &Fn) {
    const Tok *Name = nullptr;
    bool Const = false, MutablePointer = false, Function = false;
    bool Record = false;
    for (size_t I = Begin; I < End; ++I) {
      const std::string &T = S[I].Text;
      if (T == "=") break;  // the initializer
      if (T == "const") Const = true;
      if (T == "*" && !(I + 1 < End && S[I + 1].Text == "const")) {
        MutablePointer = true;
      }
      if (T == "(") {
        size_t Close = Matching(S, I);
        if (I > Begin && IsAttributeWord(S[I - 1].Text)) {
          I = Close;
          continue;
        }
        if (I + 2 < End && S[I + 1].Text == "*" && S[I + 2].Ident) {
          Name = &S[I + 2];  // (*name)(...): a function pointer
          MutablePointer = !(I + 3 < End && S[I + 3].Text == "const");
          if (I + 2 < Close && S[I + 2].Text == "const" && I + 3 < End) {
            Name = &S[I + 3];
            MutablePointer = false;
          }
          I = Close;
          continue;
        }
        if (Name != nullptr) Function = true;
        I = Close;
        continue;
      }
      if (T == "struct" || T == "union" || T == "enum" || T == "class") {
        Record = true;
      }
      if (T == "{" && Record) {
        I = Matching(S, I);  // a struct's body: the declarator follows it
        Name = nullptr;
        continue;
      }
      if ((T == "{" || T == "[") && Name == nullptr) {
        I = Matching(S, I);  // a struct's body, an attribute's brackets
        continue;
      }
      if (T == "[" || T == "{") break;
      if (S[I].Ident && !IsAttributeWord(T)) Name = &S[I];
    }
    if (Name == nullptr || Function) return;
    if (Const && !MutablePointer) return;  // const all the way, lexically
    Out->push_back({Name->Offset, Name->Text, Fn});
  }

  std::vector<InactiveStatic> *Out;
};

}  // namespace

std::vector<InactiveStatic> ScanInactiveBranch(StringRef Text,
                                               const std::string &InFunction,
                                               const clang::LangOptions &LO) {
  std::vector<InactiveStatic> Out;
  std::vector<Tok> Toks = Tokens(Text, LO);
  Scanner(&Out).Scan(Toks, 0, Toks.size(), InFunction);
  return Out;
}

}  // namespace atlas_lint
