# Project CMake helpers (in the spirit of CIRCT's AddCIRCT.cmake).
#
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
  set_property(GLOBAL APPEND PROPERTY HETPAR_LIBS ${name})
  install(TARGETS ${name} EXPORT HetParTargets LIBRARY DESTINATION lib)
endfunction()

# hetpar_add_tool(name SOURCES... [LINK_LIBS libs...])
function(hetpar_add_tool name)
  cmake_parse_arguments(ARG "" "" "LINK_LIBS" ${ARGN})
  add_executable(${name} ${ARG_UNPARSED_ARGUMENTS})
  target_link_libraries(${name} PRIVATE MLIR LLVM ${ARG_LINK_LIBS})
  install(TARGETS ${name} EXPORT HetParTargets RUNTIME DESTINATION bin)
endfunction()
