# memdump — checkpoint and restore the memory of a running Linux process.
#
#   make            build build/memdump
#   make demo       install what is missing, build, dump and restore a demo process
#   make test       install what is missing, build (plain and ASan/UBSan), run the tests
#   make deps       install the Debian packages the build and the tests need
#   make fuzz       build build-fuzz/fuzz-images, the libFuzzer target for the image loaders
#   make install    build/memdump and memdump(8) under $(DESTDIR)$(PREFIX) (/usr/local)

CC       ?= gcc
BLOB_CC  ?= $(CC)
BUILD    ?= build
PKGS     := libnl-3.0 libprotobuf-c liblz4 libzstd libcrypto
OPT      ?= -O2 -g
CFLAGS   := $(OPT) -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE -Iinclude -Isrc -I$(BUILD)/images \
            $(shell pkg-config --cflags $(PKGS) 2>/dev/null) \
            $(shell pkg-config --cflags gnutls 2>/dev/null)	# headers only: xfer_tls.c dlopens it
LDLIBS   += $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lcap -lpthread

# Freestanding blobs: position-independent, no libc, no startup files.
BLOB_CFLAGS := -std=gnu11 -Wall -Wextra -Werror -O2 -Iinclude -ffreestanding -fno-builtin \
               -fPIE -fno-stack-protector -fno-asynchronous-unwind-tables -fno-unwind-tables \
               -fcf-protection=none -mno-sse -mno-mmx -mno-avx -nostdlib -fno-jump-tables
BLOB_LDFLAGS := -nostdlib -static -Wl,--build-id=none -Wl,-z,noexecstack -Wl,--no-warn-rwx-segments

PROTOS   := $(wildcard images/*.proto)
PB_SRCS  := $(patsubst images/%.proto,$(BUILD)/images/%.pb-c.c,$(PROTOS))
PB_HDRS  := $(PB_SRCS:.c=.h)
SRCS     := $(wildcard src/*/*.c)
OBJS     := $(patsubst src/%.c,$(BUILD)/src/%.o,$(SRCS)) $(PB_SRCS:.c=.o) \
            $(BUILD)/blobs.o
BLOBS    := parasite restorer
TEST_SRCS := $(wildcard test/*.c)
TEST_BINS := $(patsubst test/%.c,$(BUILD)/test/%,$(TEST_SRCS))

all: $(BUILD)/memdump $(TEST_BINS)

$(BUILD)/memdump: $(OBJS)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/images/%.pb-c.c $(BUILD)/images/%.pb-c.h: images/%.proto
	@mkdir -p $(BUILD)/images
	protoc-c --proto_path=images --c_out=$(BUILD)/images $<

$(BUILD)/images/%.pb-c.o: $(BUILD)/images/%.pb-c.c $(PB_HDRS)
	$(CC) $(filter-out -Wextra,$(CFLAGS)) -c -o $@ $<

$(BUILD)/src/%.o: src/%.c $(PB_HDRS) $(wildcard include/*.h src/*/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

# Each blob: parasite/NAME*.c + parasite/blob-entry.S, linked by parasite/blob.lds
# into a flat binary whose first byte is the entry point, then embedded.
$(BUILD)/blob/%.elf: parasite/blob.lds parasite/blob-entry.S $(wildcard parasite/*.c parasite/*.h include/*.h)
	@mkdir -p $(BUILD)/blob
	$(BLOB_CC) $(BLOB_CFLAGS) $(BLOB_LDFLAGS) -Wl,-T,parasite/blob.lds -o $@ \
		parasite/blob-entry.S $(wildcard parasite/$*.c parasite/$*-*.c)
	@if readelf -r $@ | grep -q R_X86; then echo "$@: blob needs relocations"; exit 1; fi

$(BUILD)/blob/%.bin: $(BUILD)/blob/%.elf
	objcopy -O binary $< $@

$(BUILD)/blobs.o: src/lib/blobs.S $(patsubst %,$(BUILD)/blob/%.bin,$(BLOBS))
	$(CC) -c -DPARASITE_BIN='"$(BUILD)/blob/parasite.bin"' \
		-DRESTORER_BIN='"$(BUILD)/blob/restorer.bin"' -o $@ $<

$(BUILD)/test/%: test/%.c $(wildcard test/*.h)
	@mkdir -p $(BUILD)/test
	$(CC) -std=gnu11 -O1 -g -Wall -Wextra -Werror -pthread -o $@ $< -lpthread -lrt

# The blob's LZ4 block decoder built for the host and fuzzed against liblz4,
# with ASan and UBSan (test/lz4blk-fuzz.c, scripts/fuzz-lz4blk).
$(BUILD)/test/lz4blk-fuzz: test/lz4blk-fuzz.c include/lz4blk.h
	@mkdir -p $(BUILD)/test
	$(CC) -std=gnu11 -O1 -g -Wall -Wextra -Werror -fsanitize=address,undefined \
		-fno-sanitize-recover=undefined -fno-omit-frame-pointer -o $@ $< -llz4

# The libFuzzer target (fuzz/fuzz-images.c): every object but main.o, built by
# clang with ASan/UBSan and libFuzzer's coverage; the blobs stay gcc's.
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer

fuzz: deps
	$(MAKE) BUILD=build-fuzz CC=clang BLOB_CC=gcc FUZZ_NOCOV=-fno-sanitize=fuzzer-no-link \
		OPT="-O1 -g -fsanitize=fuzzer-no-link $(FUZZ_SAN)" build-fuzz/fuzz-images

# The checksum runs over every byte of every image several times per input:
# no coverage there (it has no branches on the data), or it is all the fuzzer does.
$(BUILD)/src/image/hash.o: CFLAGS += $(FUZZ_NOCOV)

$(BUILD)/fuzz-images: fuzz/fuzz-images.c $(filter-out $(BUILD)/src/cli/main.o,$(OBJS))
	$(CC) $(CFLAGS) -fsanitize=fuzzer -o $@ $^ $(LDLIBS)

deps:
	@scripts/install-deps

demo: deps
	$(MAKE) all
	scripts/demo

test: deps check-layers
	$(MAKE) all
	$(MAKE) fuzz
	$(MAKE) BUILD=build-asan OPT="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer" \
		LDFLAGS="-fsanitize=address,undefined" build-asan/memdump
	MEMDUMP=$(CURDIR)/build-asan/memdump TESTBIN=$(CURDIR)/build/test test/run.sh

check-layers:
	@scripts/check-layers

PREFIX  ?= /usr/local

install: $(BUILD)/memdump
	install -D -m 755 $(BUILD)/memdump $(DESTDIR)$(PREFIX)/sbin/memdump
	install -D -m 644 docs/memdump.8 $(DESTDIR)$(PREFIX)/share/man/man8/memdump.8

clean:
	rm -rf build build-asan build-fuzz

.PHONY: all deps demo test fuzz check-layers clean install
.SECONDARY:
