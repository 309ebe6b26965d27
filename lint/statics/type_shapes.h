// Type shapes the atlas-stray-statics check judges: what is mutable, what is
// const all the way, what may hold model-derived data, what is a latch, and
// what is a handle on state elsewhere.
#ifndef ATLAS_LINT_STATICS_TYPE_SHAPES_H_
#define ATLAS_LINT_STATICS_TYPE_SHAPES_H_

#include "clang/AST/ASTContext.h"
#include "clang/AST/Decl.h"
#include "clang/Basic/SourceManager.h"
#include "llvm/ADT/StringRef.h"

namespace atlas_lint {

// True when the object itself can be written after initialization: not const
// at the top level (arrays: their elements), volatile, a C++ class with
// mutable fields, or a reference to a mutable object.
bool IsMutableObject(clang::QualType T, const clang::ASTContext &Ctx,
                     int Depth = 0);
bool IsImmutableRecord(const clang::RecordDecl *RD,
                       const clang::ASTContext &Ctx, int Depth);
// CONST_TABLE shape: const at every level (const char *const t[]).
bool IsConstAllTheWay(clang::QualType T, const clang::ASTContext &Ctx);
// LIFECYCLE shape: no pointer, reference or floating-point value at any depth.
bool HoldsPointerOrFloat(clang::QualType T, const clang::ASTContext &Ctx,
                         int Depth = 0);
// C++: a type that holds, at any depth, a pointer, a reference, a smart
// pointer, std::function or another type-erased handle; the standard library's
// value types (string, vector, array, map, ...) are judged by their template
// arguments, not by the pointers they keep inside. Names the first handle found
// (e.g. "std::unique_ptr") in *What.
bool HoldsHandle(clang::QualType T, const clang::ASTContext &Ctx,
                 std::string *What, int Depth = 0);

// Whether Loc's file was found in a system include directory (the header
// search's characteristic, not line markers or pragmas any file can write).
bool FoundInSystemDir(clang::SourceLocation Loc,
                      const clang::SourceManager &SM);
bool InSystemHeader(const clang::Decl *D, const clang::SourceManager &SM);
bool InStd(const clang::Decl *D);

enum class LatchKind { kNotLatch, kFlag, kBoolLike };
LatchKind ClassifyLatch(clang::QualType T, const clang::SourceManager &SM,
                        const clang::ASTContext &Ctx, int Depth = 0);

}  // namespace atlas_lint

#endif  // ATLAS_LINT_STATICS_TYPE_SHAPES_H_
