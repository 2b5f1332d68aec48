# mk/docs.mk — the README's checks: its code example, compiled and run
# exactly as shown (the first ```c block of README.md) against the engine
# library, so the example cannot drift from the API; and its speed table,
# which must be reports/snapshot/speed.md (make snapshot writes both).
#
#   make readme-example
README_EX := $(B)/docs/readme_example

.PHONY: readme-example
readme-example: $(LIB)
	@mkdir -p $(dir $(README_EX))
	@awk '/^```c$$/ {on = 1; next} /^```/ {if (on) exit} on' README.md > $(README_EX).c
	@test -s $(README_EX).c || { echo "readme-example: no \`\`\`c block in README.md"; exit 1; }
	$(CC) $(CSTD) -O1 $(WARN) -Werror -Isrc -o $(README_EX) $(README_EX).c $(LIB) -fopenmp -lm
	$(README_EX)
	@python3 scripts/speed_table.py check $(SNAPSHOT_DIR)/speed.md README.md
