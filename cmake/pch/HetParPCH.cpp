// The translation unit that builds HetParPCH.h (cmake/AddHetPar.cmake).
