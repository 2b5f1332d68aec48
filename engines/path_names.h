/*
 * engines/path_names.h — how an adapter answers the ABI's paths() from a
 * fixed list of branch names (engines/ggml/ggml_paths.c,
 * engines/ort/ort_paths.c): the whole list for plan NULL, else the names
 * whose flag the plan set, in the list's order.  Header-only, so that an
 * adapter built as a shared object needs nothing else of the tree.
 */
#ifndef AG_ENGINES_PATH_NAMES_H
#define AG_ENGINES_PATH_NAMES_H

/* names[0 .. cap) of the n names in all[] whose on[i] is set (every one
 * when on is NULL); returns how many there are, written or not. */
static inline int ag_path_names(const char *const *all, const int *on, int n,
                                const char **names, int cap) {
    int k = 0;
    for (int i = 0; i < n; i++)
        if (!on || on[i]) {
            if (names && k < cap) names[k] = all[i];
            k++;
        }
    return k;
}

/* One list of branches as an enum and its names: LIST(X) spells
 * X(P_SOMETHING, "name") per branch (the one source of truth for both). */
#define AG_PATH_ENUM(e, s) e,
#define AG_PATH_NAME(e, s) s,

#endif /* AG_ENGINES_PATH_NAMES_H */
