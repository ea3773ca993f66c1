# ThreadSanitizer build of the concurrency tests (SUBMOE_TSAN=ON builds only
# this): the thread pool, the expert cache and the prefetcher, compiled with
# the sources they exercise; then, over the libraries built with TSan too, the
# cached expert provider under concurrent sessions and the serving scheduler
# (continuous batching, cancellation, shutdown). scripts/test.sh runs it in CI:
#   cmake -S . -B build-tsan -DSUBMOE_TSAN=ON && cmake --build build-tsan
#   ctest --test-dir build-tsan
find_package(GTest REQUIRED)
include(GoogleTest)
enable_testing()
set(src ${PROJECT_SOURCE_DIR}/src)
set(tst ${PROJECT_SOURCE_DIR}/tests)
file(GLOB tsan_core_sources ${src}/core/*.cpp)
add_executable(test_concurrency_tsan
  ${tsan_core_sources}
  ${src}/offload/expert_cache.cpp ${src}/offload/prefetcher.cpp ${src}/offload/cache_simulator.cpp
  ${src}/offload/routing_trace.cpp ${src}/io/file_util.cpp ${src}/io/unicode_utf8.cpp
  ${tst}/core/thread_pool_test.cpp
  ${tst}/offload/expert_cache_test.cpp ${tst}/offload/cache_stress_test.cpp ${tst}/offload/prefetcher_test.cpp
  ${tst}/offload/offload_test_util.cpp)
find_path(XXHASH_INCLUDE_DIR xxhash.h REQUIRED)
target_include_directories(test_concurrency_tsan PRIVATE ${PROJECT_SOURCE_DIR}/include ${src} ${tst} ${tst}/offload
  ${XXHASH_INCLUDE_DIR})
target_compile_options(test_concurrency_tsan PRIVATE -fsanitize=thread -g1 -O1)
target_link_options(test_concurrency_tsan PRIVATE -fsanitize=thread)
target_compile_definitions(test_concurrency_tsan PRIVATE SUBMOE_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
target_link_libraries(test_concurrency_tsan PRIVATE submoe_flags Threads::Threads GTest::gtest GTest::gtest_main)
gtest_discover_tests(test_concurrency_tsan DISCOVERY_TIMEOUT 120 PROPERTIES TIMEOUT 900 LABELS "tsan"
  TEST_PREFIX "tsan.")

# The libraries, instrumented; only what the targets below link is built. Line
# tables (-g1) are all TSan's reports need; full -g compiled ~27% slower.
add_compile_options(-fsanitize=thread -g1 -O1)
add_link_options(-fsanitize=thread)
add_subdirectory(src EXCLUDE_FROM_ALL)
function(submoe_tsan_test target)
  cmake_parse_arguments(T "" "" "LIBS;SOURCES" ${ARGN})
  add_executable(${target} ${T_SOURCES})
  target_include_directories(${target} PRIVATE ${src} ${tst})
  target_compile_definitions(${target} PRIVATE SUBMOE_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  target_link_libraries(${target} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main)
  gtest_discover_tests(${target} DISCOVERY_TIMEOUT 120 PROPERTIES TIMEOUT 900 LABELS "tsan" TEST_PREFIX "tsan.")
endfunction()
submoe_tsan_test(test_provider_tsan LIBS submoe_offload
  SOURCES ${tst}/offload/cached_expert_provider_test.cpp ${tst}/offload/offload_test_util.cpp
          ${tst}/runtime/artifact_builder.cpp)
target_include_directories(test_provider_tsan PRIVATE ${tst}/offload)
file(GLOB tsan_serve_tests ${tst}/serve/*.cpp)
submoe_tsan_test(test_serve_tsan LIBS submoe_serve SOURCES ${tsan_serve_tests})
