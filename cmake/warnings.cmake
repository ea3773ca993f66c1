# Compiler warnings and sanitizers, applied through the interface target
# submoe_flags that every project target links.
add_library(submoe_flags INTERFACE)
target_compile_options(submoe_flags INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
    -Wcast-align -Woverloaded-virtual -Wimplicit-fallthrough -Wno-missing-field-initializers>)
if(SUBMOE_WERROR)
  target_compile_options(submoe_flags INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
endif()
if(SUBMOE_SANITIZE)
  target_compile_options(submoe_flags INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer>)
  target_link_options(submoe_flags INTERFACE -fsanitize=address,undefined)
endif()
