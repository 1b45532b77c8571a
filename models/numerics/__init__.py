"""Integer-exact arithmetic of both model families: `sac` (power-of-two weights on the SAC
systolic array) and `bnn` (binarized networks). Pure numpy; the single reference."""
