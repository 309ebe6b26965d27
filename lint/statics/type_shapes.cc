// Type shapes of the atlas-stray-statics check (type_shapes.h).
#include "lint/statics/type_shapes.h"

#include <string>

#include "clang/AST/DeclCXX.h"
#include "clang/AST/DeclTemplate.h"
#include "clang/AST/Type.h"

namespace atlas_lint {

using clang::ASTContext;
using clang::QualType;
using clang::SourceLocation;
using clang::SourceManager;
using llvm::StringRef;

// A member (or a member's member, an element, a base) declared volatile.
bool HasVolatileMember(const clang::RecordDecl *RD, const ASTContext &Ctx,
                       int Depth) {
  const clang::RecordDecl *Def = RD->getDefinition();
  if (Def == nullptr || Depth > 16) return false;
  if (const auto *CRD = llvm::dyn_cast<clang::CXXRecordDecl>(Def)) {
    for (const auto &B : CRD->bases()) {
      const clang::RecordDecl *BD = B.getType()->getAsRecordDecl();
      if (BD != nullptr && HasVolatileMember(BD, Ctx, Depth + 1)) return true;
    }
  }
  for (const clang::FieldDecl *F : Def->fields()) {
    QualType FT = Ctx.getBaseElementType(F->getType());
    if (FT.isVolatileQualified()) return true;
    const clang::RecordDecl *FR = FT->getAsRecordDecl();
    if (FR != nullptr && HasVolatileMember(FR, Ctx, Depth + 1)) return true;
  }
  return false;
}

// True when the object itself can be written after initialization: not const
// at the top level (arrays: their elements), volatile, a C++ class with
// mutable fields, or a reference to a mutable object. A record none of whose
// members can be written (all const, or none at all: a lambda with no
// captures, a tag type) is not mutable even when the object is not const.
bool IsMutableObject(QualType T, const ASTContext &Ctx, int Depth) {
  if (Depth > 16) return true;
  if (T->isReferenceType()) {
    QualType P = T->getPointeeType();
    if (P->isFunctionType()) return false;
    return IsMutableObject(P, Ctx, Depth + 1);
  }
  QualType Base = Ctx.getBaseElementType(T);
  if (Base.isVolatileQualified()) return true;
  if (const auto *RD = Base->getAsRecordDecl()) {
    if (const auto *CRD = llvm::dyn_cast<clang::CXXRecordDecl>(RD)) {
      if (CRD->hasDefinition() && CRD->hasMutableFields()) return true;
    }
    // const volatile is flagged as a scalar; so in a const record.
    if (Base.isConstQualified()) return HasVolatileMember(RD, Ctx, Depth + 1);
    return !IsImmutableRecord(RD, Ctx, Depth + 1);
  }
  return !Base.isConstQualified();
}

bool IsImmutableRecord(const clang::RecordDecl *RD, const ASTContext &Ctx,
                       int Depth) {
  const clang::RecordDecl *Def = RD->getDefinition();
  if (Def == nullptr) return false;
  if (const auto *CRD = llvm::dyn_cast<clang::CXXRecordDecl>(Def)) {
    // A lambda whose call operator is const cannot change its captures (its
    // copy assignment is deleted); a `mutable` one can.
    if (CRD->isLambda()) {
      const clang::CXXMethodDecl *Call = CRD->getLambdaCallOperator();
      if (Call != nullptr && !Call->isConst()) return false;
      for (const clang::FieldDecl *F : Def->fields()) {
        if (F->getType()->isReferenceType())
          continue;  // the referent is checked itself
        if (F->getType().isVolatileQualified()) return false;
      }
      return true;
    }
    if (CRD->hasMutableFields() || CRD->isPolymorphic()) return false;
    for (const auto &B : CRD->bases()) {
      const clang::RecordDecl *BD = B.getType()->getAsRecordDecl();
      if (BD == nullptr || !IsImmutableRecord(BD, Ctx, Depth + 1)) return false;
    }
  }
  for (const clang::FieldDecl *F : Def->fields()) {
    QualType FT = F->getType();
    if (FT->isReferenceType()) continue;  // a reference cannot be reseated
    if (IsMutableObject(FT, Ctx, Depth + 1)) return false;
  }
  return true;
}

// CONST_TABLE shape: const at every level, from the element up through every
// pointer (const char *const t[]); functions are immutable.
bool IsConstAllTheWay(QualType T, const ASTContext &Ctx) {
  QualType Cur = T;
  for (int Depth = 0; Depth < 64; ++Depth) {
    if (Cur->isReferenceType()) {
      Cur = Cur->getPointeeType();
      continue;
    }
    Cur = Ctx.getBaseElementType(Cur);
    if (Cur->isFunctionType()) return true;
    if (Cur.isVolatileQualified()) return false;
    if (!Cur.isConstQualified() && IsMutableObject(Cur, Ctx)) return false;
    if (const auto *RD = Cur->getAsCXXRecordDecl()) {
      if (RD->hasDefinition() && RD->hasMutableFields()) return false;
    }
    if (Cur->isPointerType() || Cur->isMemberPointerType()) {
      Cur = Cur->getPointeeType();
      continue;
    }
    return true;
  }
  return true;
}

// LIFECYCLE shape: no pointer, reference or floating-point value at any depth,
// so the object cannot hold or point at model-derived data (a device pointer,
// a table, a scale); a terminal guard, a shutdown flag or a log ring of
// characters and indices fit.
bool HoldsPointerOrFloat(QualType T, const ASTContext &Ctx, int Depth) {
  if (Depth > 16) return true;
  QualType C = Ctx.getBaseElementType(T.getCanonicalType());
  if (C->isReferenceType() || C->isPointerType() || C->isMemberPointerType() ||
      C->isBlockPointerType() || C->isNullPtrType()) {
    return true;
  }
  if (const auto *AT = C->getAs<clang::AtomicType>()) {
    return HoldsPointerOrFloat(AT->getValueType(), Ctx, Depth + 1);
  }
  if (C->isRealFloatingType() || C->isAnyComplexType()) return true;
  if (const auto *VT =
          C->getAs<clang::VectorType>()) {  // vector_size, ext_vector
    return HoldsPointerOrFloat(VT->getElementType(), Ctx, Depth + 1);
  }
  if (const auto *RD = C->getAsRecordDecl()) {
    const clang::RecordDecl *Def = RD->getDefinition();
    if (Def == nullptr) return true;
    if (const auto *CRD = llvm::dyn_cast<clang::CXXRecordDecl>(Def)) {
      if (CRD->isPolymorphic()) return true;  // a vtable pointer
      for (const auto &B : CRD->bases()) {
        if (HoldsPointerOrFloat(B.getType(), Ctx, Depth + 1)) return true;
      }
    }
    for (const clang::FieldDecl *F : Def->fields()) {
      if (HoldsPointerOrFloat(F->getType(), Ctx, Depth + 1)) return true;
    }
  }
  return false;
}

// Whether Loc's file was found in a system include directory (-isystem, the
// compiler's own). The characteristic the header search gave the file when it
// was entered, not SourceManager::isInSystemHeader's: that one follows line
// markers ('# 1 "x.c" 3') and '#pragma GCC system_header', which any file can
// write to hide what follows.
bool FoundInSystemDir(SourceLocation Loc, const SourceManager &SM) {
  if (Loc.isInvalid()) return false;
  Loc = SM.getExpansionLoc(Loc);
  bool Invalid = false;
  const clang::SrcMgr::SLocEntry &E =
      SM.getSLocEntry(SM.getFileID(Loc), &Invalid);
  if (Invalid || !E.isFile()) return false;
  return clang::SrcMgr::isSystem(E.getFile().getFileCharacteristic());
}

bool InSystemHeader(const clang::Decl *D, const SourceManager &SM) {
  return D != nullptr && FoundInSystemDir(D->getLocation(), SM);
}

bool InStd(const clang::Decl *D) {
  const clang::DeclContext *DC = D->getDeclContext();
  while (DC != nullptr && (DC->isInlineNamespace() || DC->isRecord())) {
    DC = DC->getParent();
  }
  return DC != nullptr && DC->isStdNamespace();
}

// The latch types LOG_ONCE and DIAG_ONCE accept: bool, atomic_bool,
// atomic_flag, once_flag (C or C++), each from the standard headers (a type of
// the same name declared elsewhere can hold anything), or a type that wraps
// exactly one of them and nothing else. Never an integer or an array: a latch
// cannot hold a count or a pointer.
LatchKind ClassifyLatch(QualType T, const SourceManager &SM,
                        const ASTContext &Ctx, int Depth) {
  if (Depth > 8 || T->isArrayType()) return LatchKind::kNotLatch;
  // Typedef names first: glibc's once_flag is a typedef of an anonymous struct.
  QualType Cur = T;
  for (int Step = 0; Step < 32; ++Step) {
    const clang::Type *Ty = Cur.getTypePtr();
    if (const auto *TT = llvm::dyn_cast<clang::TypedefType>(Ty)) {
      const clang::TypedefNameDecl *TD = TT->getDecl();
      StringRef N = TD->getName();
      if (InSystemHeader(TD, SM)) {
        if (N == "once_flag" || N == "atomic_flag") return LatchKind::kFlag;
        if (N == "atomic_bool") return LatchKind::kBoolLike;
      }
      Cur = TT->desugar();
      continue;
    }
    if (const auto *ET = llvm::dyn_cast<clang::ElaboratedType>(Ty)) {
      Cur = ET->getNamedType();
      continue;
    }
    break;
  }
  QualType C = T.getCanonicalType().getUnqualifiedType();
  if (C->isBooleanType()) return LatchKind::kBoolLike;
  if (const auto *AT = C->getAs<clang::AtomicType>()) {
    return AT->getValueType()->isBooleanType() ? LatchKind::kBoolLike
                                               : LatchKind::kNotLatch;
  }
  const clang::RecordDecl *RD = C->getAsRecordDecl();
  if (RD == nullptr) return LatchKind::kNotLatch;
  StringRef N = RD->getName();
  if (InSystemHeader(RD, SM)) {
    const bool Cxx =
        llvm::isa<clang::CXXRecordDecl>(RD) && Ctx.getLangOpts().CPlusPlus;
    if ((N == "once_flag" || N == "atomic_flag") && (!Cxx || InStd(RD))) {
      return LatchKind::kFlag;
    }
    if (const auto *Spec =
            llvm::dyn_cast<clang::ClassTemplateSpecializationDecl>(RD)) {
      if (N == "atomic" && InStd(RD) && Spec->getTemplateArgs().size() == 1 &&
          Spec->getTemplateArgs()[0].getKind() ==
              clang::TemplateArgument::Type &&
          Spec->getTemplateArgs()[0].getAsType()->isBooleanType()) {
        return LatchKind::kBoolLike;
      }
    }
    return LatchKind::kNotLatch;
  }
  // A wrapper: exactly one member, no bases, no virtual functions.
  const clang::RecordDecl *Def = RD->getDefinition();
  if (Def == nullptr) return LatchKind::kNotLatch;
  if (const auto *CRD = llvm::dyn_cast<clang::CXXRecordDecl>(Def)) {
    if (CRD->getNumBases() != 0 || CRD->isPolymorphic())
      return LatchKind::kNotLatch;
  }
  const clang::FieldDecl *Only = nullptr;
  for (const clang::FieldDecl *F : Def->fields()) {
    if (Only != nullptr) return LatchKind::kNotLatch;
    Only = F;
  }
  if (Only == nullptr || Only->isBitField()) return LatchKind::kNotLatch;
  return ClassifyLatch(Only->getType(), SM, Ctx, Depth + 1);
}

namespace {

// Standard library types that are handles on state kept elsewhere: smart
// pointers, type-erased callables and values, views.
bool IsStdHandle(StringRef Name) {
  return Name == "unique_ptr" || Name == "shared_ptr" || Name == "weak_ptr" ||
         Name == "function" || Name == "move_only_function" || Name == "any" ||
         Name == "reference_wrapper" || Name == "span" ||
         Name == "basic_string_view" || Name == "packaged_task" ||
         Name == "exception_ptr" || Name == "coroutine_handle";
}

}  // namespace

bool HoldsHandle(QualType T, const ASTContext &Ctx, std::string *What,
                 int Depth) {
  if (Depth > 16) return false;
  QualType C = Ctx.getBaseElementType(T.getCanonicalType());
  if (C->isReferenceType()) {
    *What = "a reference";
    return true;
  }
  if (C->isPointerType() || C->isMemberPointerType() ||
      C->isBlockPointerType()) {
    *What = "a pointer";
    return true;
  }
  if (const auto *AT = C->getAs<clang::AtomicType>()) {
    return HoldsHandle(AT->getValueType(), Ctx, What, Depth + 1);
  }
  const clang::RecordDecl *RD = C->getAsRecordDecl();
  if (RD == nullptr) return false;
  if (InStd(RD)) {
    if (IsStdHandle(RD->getName())) {
      *What = "std::" + RD->getName().str();
      return true;
    }
    // A value type of the library (string, vector, array, map, pair, ...):
    // deep-const when its template arguments are; the pointers it keeps
    // inside are its own.
    const auto *Spec =
        llvm::dyn_cast<clang::ClassTemplateSpecializationDecl>(RD);
    if (Spec == nullptr) return false;
    for (const clang::TemplateArgument &Arg :
         Spec->getTemplateArgs().asArray()) {
      if (Arg.getKind() == clang::TemplateArgument::Type &&
          HoldsHandle(Arg.getAsType(), Ctx, What, Depth + 1)) {
        return true;
      }
    }
    return false;
  }
  const clang::RecordDecl *Def = RD->getDefinition();
  if (Def == nullptr) return false;
  if (const auto *CRD = llvm::dyn_cast<clang::CXXRecordDecl>(Def)) {
    for (const auto &B : CRD->bases()) {
      if (HoldsHandle(B.getType(), Ctx, What, Depth + 1)) return true;
    }
  }
  for (const clang::FieldDecl *F : Def->fields()) {
    if (HoldsHandle(F->getType(), Ctx, What, Depth + 1)) return true;
  }
  return false;
}

}  // namespace atlas_lint
