"""ImageCoDe's static-picture sets (Krojer et al. 2022, §3.1 "Static Pictures"):

    sets.py      sampled query images and their nearest neighbours, named and split
    release.py   the sets into the release: their images in the public layout, distances
"""
