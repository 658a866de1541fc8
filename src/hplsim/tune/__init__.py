"""``hplsim tune``: search HPL's parameters on a simulated platform under a budget of
simulation time, and recommend an HPL.dat with a predicted Gflops and its 90 % interval."""
