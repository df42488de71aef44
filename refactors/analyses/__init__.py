"""What the rules know about the code: facts read from the source, never code built.

Which expressions are tensors (:mod:`.tensor_types`, from :mod:`.tensor_kinds`
and :mod:`.annotations`), which calls are pure or may fault (:mod:`.purity`),
which functions run compiled (:mod:`.regions`), which names a function binds,
reads or updates in place (:mod:`.bindings`), the ``torch.nn`` layers a class
builds (:mod:`.layers`), whether a function can run as one graph
(:mod:`.hybridization`), and the tables of torch names behind them
(:mod:`.torch_facts`, :mod:`.cond_facts`).  Nothing here imports a rewrite, a
rule or the rule context.
"""
