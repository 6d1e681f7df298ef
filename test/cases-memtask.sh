# Memory and task states of zdtm and issue 24 (Beyond CRIU): each restored
# exactly, or refused by name before the target is harmed.

# mseal()ed mappings (VmFlags sl): sealed again by the restorer, last, with
# their bytes; the unsealed rest of a split VMA stays unsealed (t-mseal).
add vma-mseal case_rst default t-mseal

# MAP_DROPPABLE memory (VmFlags dp): mapped droppable again, empty, as the
# kernel may leave it at any time; wipe-on-fork memory beside it intact.
add vma-droppable case_rst default t-droppable
