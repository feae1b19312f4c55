# Project CMake helpers (in the spirit of CIRCT's AddCIRCT.cmake).
#
# Precompiled headers (GCC only). Every MLIR-using target reuses one
# precompiled cmake/pch/HetParPCH.h, built by the object library HetParPCH
# with the project's common flags. A target whose flags GCC finds
# incompatible (-fexceptions) falls back to parsing the header; -Winvalid-pch
# says so. Clang (the sanitizer build) and HETPAR_PCH=OFF parse every header
# as written, which also catches a source that forgets an include.
option(HETPAR_PCH "Precompile the common MLIR and dialect headers (GCC)" ON)
function(hetpar_use_pch name)
  if(TARGET HetParPCH)
    target_precompile_headers(${name} REUSE_FROM HetParPCH)
    target_compile_options(${name} PRIVATE -Winvalid-pch)
  endif()
endfunction()

# hetpar_add_library(name SOURCES... [DEPENDS targets...] [LINK_LIBS libs...] [EH])
#   A shared library linked against Debian's libMLIR.so / libLLVM.so. Shared, so that an
#   out-of-tree pass plugin loaded into hetpar-opt sees the same dialect and TypeIDs as the tool.
#   EH turns exceptions on for this library only (LLVM is built without them; the ONNX library
#   reports errors by throwing).
function(hetpar_add_library name)
  cmake_parse_arguments(ARG "EH" "" "DEPENDS;LINK_LIBS" ${ARGN})
  add_library(${name} SHARED ${ARG_UNPARSED_ARGUMENTS})
  if(ARG_DEPENDS)
    add_dependencies(${name} ${ARG_DEPENDS})
  endif()
  target_link_libraries(${name} PUBLIC MLIR LLVM ${ARG_LINK_LIBS})
  target_include_directories(${name} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
    $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/include>
    $<INSTALL_INTERFACE:include>)
  if(ARG_EH)
    target_compile_options(${name} PRIVATE -fexceptions)
  endif()
  # Code that derives from MLIR classes (passes, patterns) must match LLVM's RTTI
  # setting; consumers of the installed package get it from here.
  if(NOT LLVM_ENABLE_RTTI)
    target_compile_options(${name} INTERFACE -fno-rtti)
  endif()
  hetpar_use_pch(${name})
  set_property(GLOBAL APPEND PROPERTY HETPAR_LIBS ${name})
  install(TARGETS ${name} EXPORT HetParTargets LIBRARY DESTINATION lib)
endfunction()

# hetpar_add_tool(name SOURCES... [LINK_LIBS libs...])
function(hetpar_add_tool name)
  cmake_parse_arguments(ARG "" "" "LINK_LIBS" ${ARGN})
  add_executable(${name} ${ARG_UNPARSED_ARGUMENTS})
  target_link_libraries(${name} PRIVATE MLIR LLVM ${ARG_LINK_LIBS})
  hetpar_use_pch(${name})
  install(TARGETS ${name} EXPORT HetParTargets RUNTIME DESTINATION bin)
endfunction()
